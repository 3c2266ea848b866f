package dsn

import (
	"errors"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var parseSeeds = []string{
	"",
	";",
	"driver=postgres;primary='host=db1 user=app dbname=shop';replica='host=db2 user=app dbname=shop' weight=3;replica='host=db3 user=app dbname=shop' weight=1;pool_size=50",
	"driver=pg;primary='host=db1 password=" + sentinel + "';replica='host=db2 password=hunter2x' weight=0 name=spare",
	"driver=mysql;primary='app:" + sentinel + "@tcp(db1:3306)/shop';replica=app:pw@tcp(db2:3306)/shop name=r2",
	"driver=pgx;primary=postgres://u:p@h/db?sslmode=disable&password=x;fallback=error;readonly_tx=primary;breaker=off",
	"\n  driver=pg;\n  primary='p';\n  replica='r' weight=2\n    name=east;\n",
	`driver=pg;primary='it\'s \\ \x';probe_query='SELECT \'1\''`,
	"driver=pg;primary=p;pool_size=10;min_idle=10;acquire_timeout=1ms;idle_timeout=0;max_lifetime=1h;max_waiters=0;check_interval=1s;probe_timeout=2s",
	"driver=pg;primary=p;pool_sise=3",
	"driver=pg;primary='unterminated",
	"driver=pg;primary='a'b",
	"driver=pg;primary=p weight=2",
	"driver=pg;primary=p;replica=r weight=-1",
	"driver=pg;primary=p;replica=r name='' ",
	"driver=pg;primary=p;replica=a name=x;replica=b name=x",
	"driver= pg;primary =p",
}

// pwRe finds libpq-style passwords "password=XYZ" (XYZ alphanumeric,
// delimited by whitespace) in a node DSN.
var pwRe = regexp.MustCompile(`(?:^|[ \t\n\r\v\f])password=([A-Za-z0-9]{6,})(?:[ \t\n\r\v\f]|$)`)

func FuzzParse(f *testing.F) {
	for _, s := range parseSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := Parse(s)
		if err != nil {
			if c != nil {
				t.Fatal("Config returned with an error")
			}
			var e *Error
			if !errors.As(err, &e) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %T %v is not a *Error", err, err)
			}
			if msg := err.Error(); strings.ContainsAny(msg, "\n\r") {
				t.Fatalf("error is not one line: %q", msg)
			}
			return
		}
		// Round trip through the canonical form.
		canon := c.FormatDSN()
		c2, err := Parse(canon)
		if err != nil {
			t.Fatalf("Parse(FormatDSN()) failed: %v\ninput %q\ncanonical %q", err, s, canon)
		}
		if diff := cmp.Diff(c, c2, cmpConfig); diff != "" {
			t.Fatalf("round trip mismatch for %q (-want +got):\n%s", s, diff)
		}
		if again := c2.FormatDSN(); again != canon {
			t.Fatalf("FormatDSN is not canonical: %q then %q", canon, again)
		}
		// Validate accepts and does not change a parsed Config.
		c3 := *c
		c3.Replicas = append([]Node(nil), c.Replicas...)
		if err := c3.Validate(); err != nil || !cmp.Equal(c, &c3, cmpConfig) {
			t.Fatalf("Validate on a parsed Config: %v, diff %s", err, cmp.Diff(c, &c3, cmpConfig))
		}
		// The redacted form parses too, keeping the structure.
		str := c.String()
		r, err := Parse(str)
		if err != nil {
			t.Fatalf("Parse(String()) failed: %v\nString %q", err, str)
		}
		if len(r.Replicas) != len(c.Replicas) || r.Primary.Name != c.Primary.Name {
			t.Fatalf("Parse(String()) changed the nodes: %q", str)
		}
		clean := Redact(c.Primary.DSN) == c.Primary.DSN
		for _, n := range c.Replicas {
			clean = clean && Redact(n.DSN) == n.DSN
		}
		if clean && str != canon {
			t.Fatalf("no password but String() %q != FormatDSN() %q", str, canon)
		}
		// No libpq-style password of any node shows in String().
		for i := -1; i < len(c.Replicas); i++ {
			n := &c.Primary
			if i >= 0 {
				n = &c.Replicas[i]
			}
			for _, m := range pwRe.FindAllStringSubmatchIndex(n.DSN, -1) {
				pw := n.DSN[m[2]:m[3]]
				// Skip passwords that also show elsewhere: String() of the
				// same Config with this password changed must not
				// contain it.
				alt := *c
				alt.Replicas = append([]Node(nil), c.Replicas...)
				an := &alt.Primary
				if i >= 0 {
					an = &alt.Replicas[i]
				}
				an.DSN = n.DSN[:m[2]] + "Q" + n.DSN[m[3]:]
				if strings.Contains(alt.String(), pw) {
					continue
				}
				if strings.Contains(str, pw) {
					t.Fatalf("String() %q leaks password %q of node DSN %q", str, pw, n.DSN)
				}
			}
		}
	})
}

// sanitizeMySQLUser removes the bytes a go-sql-driver/mysql user name
// cannot contain.
func sanitizeMySQLUser(u string) string {
	return strings.Map(func(r rune) rune {
		if r == ':' || r == '@' || r == '/' {
			return -1
		}
		return r
	}, u)
}

func FuzzRedact(f *testing.F) {
	f.Add("postgres://u:p@h/db?password=x", "app", sentinel)
	f.Add("host=h password='a b' dbname=d", "app", "p@ss:w/rd")
	f.Add("u:p@tcp(h:3306)/db?pwd=1", "postgres", "//x")
	f.Add("Server=x;Password=y;Database=z", "a b", "it's \\ a pw")
	f.Add("file:x.db?_auth_pass=z", "", "?#&x=y;")
	f.Fuzz(func(t *testing.T, s, user, pw string) {
		out := Redact(s) // must not panic
		if out != s && !strings.Contains(out, redacted) {
			t.Fatalf("Redact(%q) = %q changed the input without redacting", s, out)
		}

		u := sanitizeMySQLUser(user)
		forms := []func(pw string) string{
			// go-sql-driver/mysql
			func(pw string) string { return u + ":" + pw + "@tcp(db:3306)/shop?parseTime=true" },
			func(pw string) string { return u + ":" + pw + "@/shop" },
			// libpq
			func(pw string) string {
				return "host=db user=" + libpqQuote(user) + " password=" + libpqQuote(pw) + " dbname=shop"
			},
			func(pw string) string { return "password=" + libpqQuote(pw) },
			// URL, password escaped
			func(pw string) string {
				return "postgres://" + url.UserPassword(user, pw).String() + "@db:5432/shop?sslmode=disable"
			},
		}
		if len(pw) < 3 {
			return
		}
		for i, form := range forms {
			in := form(pw)
			got := Redact(in)
			// Skip passwords that show in the redaction of the same DSN
			// with another password (they are then not secret text).
			if strings.Contains(Redact(form("x")), pw) {
				continue
			}
			if strings.Contains(got, pw) {
				t.Fatalf("form %d: Redact(%q) = %q leaks the password %q", i, in, got, pw)
			}
			// Same through a Config.
			c := nodeConfig(in)
			if strings.Contains(nodeConfig(form("x")).String(), pw) {
				continue
			}
			if str := c.String(); strings.Contains(str, pw) {
				t.Fatalf("form %d: String() = %q leaks the password %q", i, str, pw)
			}
			if got, err := Parse(c.FormatDSN()); err != nil || got.Replicas[0].DSN != in {
				t.Fatalf("form %d: node DSN %q does not round trip: %v", i, in, err)
			}
		}
	})
}

// nodeConfig returns a valid Config with a replica whose DSN is dsn.
func nodeConfig(dsn string) *Config {
	c := NewConfig()
	c.Driver = "pg"
	c.Primary = Node{DSN: "p"}
	c.Replicas = []Node{{DSN: dsn, Weight: 1}}
	if err := c.Validate(); err != nil {
		panic(err)
	}
	return c
}

// FuzzParseErrorSecret writes a password raw (unescaped, possibly breaking
// the quoting) into node DSNs and checks that no Parse error echoes it.
func FuzzParseErrorSecret(f *testing.F) {
	for _, pw := range []string{sentinel, "S3nt'inel", "S3nt' wieght", "Pw1' weight=x", "Ab1' name=''", `Ab1\`, "Ab1 x", "Pw1';", "Ab1'x'"} {
		f.Add(pw)
	}
	templates := []string{
		"driver=pg;primary='host=db password=%s';replica=r",
		"driver=pg;primary='host=db password=%s' name=x;replica=r",
		"driver=pg;primary=host=db password=%s",
		"driver=pg;primary=password=%s",
		"driver=pg;primary=p;replica='host=db password=%s' weight=2;replica=r2",
		"driver=pg;replica='password=%s';primary=p;pool_size=0",
		"driver=mysql;primary=app:%s@tcp(db:3306)/shop;replica=r",
		"driver=mysql;primary='app:%s@tcp(db:3306)/shop' weight=1",
		"driver=pg;primary='postgres://app:%s@db/shop'x",
		"primary='host=db password=%s",
	}
	f.Fuzz(func(t *testing.T, pw string) {
		// Only distinctive passwords: none of the error vocabulary
		// (lower-case words, known keys) can contain them.
		if len(pw) < 6 || strings.IndexFunc(pw, func(r rune) bool { return 'A' <= r && r <= 'Z' }) < 0 ||
			strings.IndexFunc(pw, func(r rune) bool { return '0' <= r && r <= '9' }) < 0 ||
			strings.ContainsAny(pw, ";=") {
			return
		}
		for _, tmpl := range templates {
			in := strings.Replace(tmpl, "%s", pw, 1)
			_, err := Parse(in)
			if err != nil && strings.Contains(err.Error(), pw) {
				t.Fatalf("Parse(%q) error %q echoes the password", in, err)
			}
		}
	})
}
