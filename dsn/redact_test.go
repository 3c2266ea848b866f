package dsn

import (
	"strings"
	"testing"
)

func TestRedact(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		// URLs.
		{"url", "postgres://user:secret@host:5432/db?sslmode=disable", "postgres://user:***@host:5432/db?sslmode=disable"},
		{"url postgresql", "postgresql://app:secret@db1/shop", "postgresql://app:***@db1/shop"},
		{"url user only", "postgresql://user@host/db", "postgresql://user@host/db"},
		{"url no userinfo", "postgres://host:5432/db?sslmode=require", "postgres://host:5432/db?sslmode=require"},
		{"url empty password", "postgres://user:@host/db", "postgres://user:***@host/db"},
		{"url escaped password", "postgres://user:p%40ss%3Aw@host/db", "postgres://user:***@host/db"},
		{"url raw at", "postgres://user:p@ss@host/db", "postgres://user:***@host/db"},
		{"url raw ats", "postgres://user:@p@ss@@host/db?x=1", "postgres://user:***@host/db?x=1"},
		{"url raw colon", "postgres://user:pa:ss@host/db", "postgres://user:***@host/db"},
		{"url raw slash", "postgres://user:pa/ss@host/db", "postgres://user:***@host/db"},
		{"url raw question mark", "postgres://user:pa?ss@host/db", "postgres://user:***@host/db"},
		{"url raw hash", "postgres://user:pa#ss@host/db", "postgres://user:***@host/db"},
		{"url digits and question mark", "postgres://u:1234?5@host/db", "postgres://u:***@host/db"},
		{"url raw at and hash", "postgres://u:p@ss#w@rd@host/db", "postgres://u:***@host/db"},
		{"url raw space and quote", "postgres://u:it's a pw@host/db", "postgres://u:***@host/db"},
		{"url at in query", "postgres://host:5432/db?application_name=me@corp", "postgres://host:5432/db?application_name=me@corp"},
		{"url user and at in query", "postgres://u@h/db?application_name=me@corp", "postgres://u@h/db?application_name=me@corp"},
		{"url password and at in query", "postgres://u:pw@h/db?application_name=me@corp", "postgres://u:***@h/db?application_name=me@corp"},
		{"url ipv6", "postgres://u:pw@[::1]:5432/db", "postgres://u:***@[::1]:5432/db"},
		{"url ipv6 no user", "postgres://[::1]:5432/db?x=a@b", "postgres://[::1]:5432/db?x=a@b"},
		{"url query password", "postgres://host/db?sslmode=disable&password=secret", "postgres://host/db?sslmode=disable&password=***"},
		{"url query first", "postgres://host/db?password=secret&sslmode=disable", "postgres://host/db?password=***&sslmode=disable"},
		{"url query names", "postgres://h/db?PASSWORD=a&Pwd=b&pass=c&passwd=d&user=u", "postgres://h/db?PASSWORD=***&Pwd=***&pass=***&passwd=***&user=u"},
		{"url query empty", "postgres://h/db?password=&sslmode=disable", "postgres://h/db?password=***&sslmode=disable"},
		{"url query escaped key", "postgres://h/db?pass%77ord=x&a=b", "postgres://h/db?pass%77ord=***&a=b"},
		{"url query raw ampersand", "postgres://h/db?password=a&b&sslmode=disable", "postgres://h/db?password=***&sslmode=disable"},
		{"url sslpassword", "postgres://h/db?sslpassword=x&sslkey=/k", "postgres://h/db?sslpassword=***&sslkey=/k"},
		{"url both", "postgres://u:a@h/db?password=b", "postgres://u:***@h/db?password=***"},
		{"sqlserver", "sqlserver://sa:secret@host:1433?database=db", "sqlserver://sa:***@host:1433?database=db"},
		{"mongodb+srv", "mongodb+srv://u:p@cluster0.example.net/db", "mongodb+srv://u:***@cluster0.example.net/db"},
		{"clickhouse secret param", "clickhouse://u:p@h:9000/db?client_secret=1&x=2", "clickhouse://u:***@h:9000/db?client_secret=***&x=2"},
		{"unknown scheme user only", "foo://bar@h/db", "foo:***@h/db"},
		{"url user only empty host", "postgres://user@/db?host=/tmp", "postgres:***@/db?host=/tmp"}, // could be mysql user "postgres"
		{"url hash user empty host", "postgres://#@/shop", "postgres:***@/shop"},                    // mysql user "postgres", password "//#"
		{"url user only empty host no query", "postgres://user@/db", "postgres:***@/db"},
		{"url password empty host no query", "postgres://user:pw@/db", "postgres:***@/db"}, // could be mysql user "postgres"
		{"url password empty host", "postgres://user:pw@/db?host=/tmp", "postgres://user:***@/db?host=/tmp"},

		// go-sql-driver/mysql.
		{"mysql", "user:secret@tcp(localhost:3306)/db", "user:***@tcp(localhost:3306)/db"},
		{"mysql params", "user:secret@tcp(h:3306)/db?parseTime=true&loc=UTC", "user:***@tcp(h:3306)/db?parseTime=true&loc=UTC"},
		{"mysql tricky password", "user:p@ss:w/rd@tcp(h:3306)/db?parseTime=true", "user:***@tcp(h:3306)/db?parseTime=true"},
		{"mysql password with spaces and quotes", `user:it's a "pw" @x@tcp(h)/db`, "user:***@tcp(h)/db"},
		{"mysql no password", "user@tcp(h:3306)/db", "user@tcp(h:3306)/db"},
		{"mysql empty password", "user:@tcp(h)/db", "user:***@tcp(h)/db"},
		{"mysql default net", "user:secret@/db", "user:***@/db"},
		{"mysql unix", "user:secret@unix(/tmp/mysql.sock)/db", "user:***@unix(/tmp/mysql.sock)/db"},
		{"mysql no user", "tcp(h:3306)/db?password=x&timeout=1s", "tcp(h:3306)/db?password=***&timeout=1s"},
		{"mysql db only", "/db", "/db"},
		{"mysql at in params", "user:pw@tcp(h)/db?x=a@b", "user:***@tcp(h)/db?x=a@b"},
		{"mysql user like scheme", "postgres://x@tcp(h)/db", "postgres:***@tcp(h)/db"},
		{"mysql missing slash", "user:pw@tcp(h)", "user:***@tcp(h)"},
		{"mysql param names", "u@tcp(h)/d?Pwd=1&passwd=2&pass=3&x=4", "u@tcp(h)/d?Pwd=***&passwd=***&pass=***&x=4"},

		// libpq key=value.
		{"kv", "host=h user=u password=secret dbname=d", "host=h user=u password=*** dbname=d"},
		{"kv alone", "password=secret", "password=***"},
		{"kv first", "password=secret host=h", "password=*** host=h"},
		{"kv quoted", "host=h password='sec ret' dbname=d", "host=h password=*** dbname=d"},
		{"kv quoted escapes", `host=h password='it\'s \\ x' dbname=d`, "host=h password=*** dbname=d"},
		{"kv quoted trailing backslash", `host=h password='x\\' dbname=d`, "host=h password=*** dbname=d"},
		{"kv spaces around =", "host=h password = secret dbname=d", "host=h password =*** dbname=d"},
		{"kv empty then key", "host=h password= dbname=d", "host=h password=***"},
		{"kv empty quoted", "host=h password='' dbname=d", "host=h password=*** dbname=d"},
		{"kv empty at end", "host=h password=", "host=h password=***"},
		{"kv special chars", "host=h password=p@ss:w/rd;x&y=z dbname=d", "host=h password=*** dbname=d"},
		{"kv upper case", "host=h PASSWORD=x", "host=h PASSWORD=***"},
		{"kv sslpassword", "host=h sslpassword=x sslmode=verify-full", "host=h sslpassword=*** sslmode=verify-full"},
		{"kv unterminated", "host=h password='unterminated dbname=d", "host=h password=***"},
		{"kv unquoted spaces", "host=h password=my secret dbname=d", "host=h password=*** dbname=d"},
		{"kv multi-line", "host=h\n  password=secret\n  dbname=d", "host=h\n  password=***\n  dbname=d"},
		{"kv value named password", "host=h user=password dbname=d", "host=h user=password dbname=d"},
		{"kv quoted key text", "host=h application_name='password=x' user=u", "host=h application_name='password=***"}, // redacts more
		{"kv no password", "host=h user=u dbname=d sslmode=disable", "host=h user=u dbname=d sslmode=disable"},
		{"semicolon pairs", "Server=x;Password=y;Database=z", "Server=x;Password=***"},
		{"semicolon pairs spaced", "Server=x; User Id=sa; Password=my pw; Database=z", "Server=x; User Id=sa; Password=*** Database=z"},

		// Other.
		{"empty", "", ""},
		{"word", "hello", "hello"},
		{"sqlite params", "file:test.db?_auth_user=u&_auth_pass=secret&_auth=1", "file:test.db?_auth_user=u&_auth_pass=***&_auth=1"},
		{"sqlite at in params", "file:test.db?_auth_user=u@x&cache=shared", "file:test.db?_auth_user=u@x&cache=shared"},
		{"generic userinfo", "user:pass@host", "user:***@host"},
		{"token", "token=abc", "token=***"},
		{"access token param", "snowflake://u@acct/db?token=abc&warehouse=w", "snowflake://u@acct/db?token=***&warehouse=w"},
		{"binary", "\x00\xff password=\x01\x02", "\x00\xff password=***"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Redact(tt.in)
			if got != tt.want {
				t.Errorf("Redact(%q)\n got %q\nwant %q", tt.in, got, tt.want)
			}
			if again := Redact(got); again != got {
				t.Errorf("Redact is not idempotent: Redact(%q) = %q", got, again)
			}
		})
	}
}

func TestRedactPasswordForms(t *testing.T) {
	pws := []string{
		sentinel, sentinel + "@x", "@" + sentinel + ":", sentinel + "'q", "a b " + sentinel,
		sentinel + `\`, sentinel + "/x@y:z", "?" + sentinel + "#", sentinel + "&x=y", sentinel + ";",
	}
	for _, pw := range pws {
		inputs := []string{
			"app:" + pw + "@tcp(db:3306)/shop?parseTime=true",
			"host=db user=app password=" + libpqQuote(pw) + " dbname=shop",
			"password=" + libpqQuote(pw),
		}
		for _, in := range inputs {
			if got := Redact(in); strings.Contains(got, sentinel) {
				t.Errorf("Redact(%q) = %q leaks the password", in, got)
			}
		}
	}
}

// libpqQuote quotes v as a libpq connection string value if needed.
func libpqQuote(v string) string {
	if v != "" && !strings.ContainsAny(v, " \t\n\r\v\f'\\") {
		return v
	}
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(v) + "'"
}

func TestIsSecretKey(t *testing.T) {
	for k, want := range map[string]bool{
		"password": true, "PASSWORD": true, "passwd": true, "pwd": true, "pass": true, "pw": true,
		"sslpassword": true, "_auth_pass": true, "client_secret": true, "access_token": true,
		"passphrase": true, "dbpass": true, "adminpwd": true, "pass%77ord": true,
		"user": false, "host": false, "dbname": false, "sslmode": false, "application_name": false,
		"port": false, "": false, "%zz": false,
	} {
		if got := isSecretKey(k); got != want {
			t.Errorf("isSecretKey(%q) = %v, want %v", k, got, want)
		}
	}
}
