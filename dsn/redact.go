package dsn

import (
	"net/url"
	"sort"
	"strings"
)

// redacted replaces every secret.
const redacted = "***"

// Redact returns nodeDSN with passwords replaced by "***". It never panics
// and returns nodeDSN unchanged when it finds nothing to hide.
//
// It understands:
//   - URLs, scheme://user:password@host/...: the password of the user info
//     is replaced (user:***@host). A raw password containing '@', '?', '#',
//     '/' or ':' is handled as the drivers do (the user info ends at the
//     last '@' of the authority) and, when ambiguous, by redacting more.
//     "scheme://...@/db" (empty host) and "scheme://name@host" with a
//     scheme that is not a known database scheme may be mysql DSNs whose
//     password starts with "//": they are redacted as such too
//     (scheme:***@/db);
//   - go-sql-driver/mysql DSNs, user:password@net(addr)/db?params: the
//     password runs from the first ':' to the last '@' before the last '/',
//     as the mysql driver splits it, so it may contain ':', '@' and '/';
//   - libpq key=value strings: the value of password (and of any key
//     listed below), bare or single-quoted with backslash escapes, is
//     replaced whole, quotes included (password=***); whitespace after '='
//     is skipped as libpq does;
//   - query parameters and key=value pairs anywhere in the string (URL
//     query, mysql params, ';'-separated strings) whose key, compared
//     case-insensitively and after %-decoding, is password, passwd, pwd,
//     pass or pw, contains "passw", "secret" or "token", or has a word
//     starting or ending in "pass" or ending in "pwd" (sslpassword,
//     _auth_pass, client_secret, access_token, ...).
//
// An empty password is replaced too, so the output does not tell whether a
// password was set. When the structure is ambiguous, Redact hides more
// rather than less: a secret value extends up to the next separator that
// is followed by another key=, and all applicable rules are applied
// together, so the result may hide some non-secret text.
func Redact(nodeDSN string) string {
	s := nodeDSN
	var sp spans
	scheme := urlScheme(s)
	ok, emptyNet := mysqlShape(s)
	if ok {
		redactMySQL(s, true, &sp)
	}
	// "postgres://u:p@/db" is a URL or a mysql DSN (user "postgres",
	// password "//u:p"): apply both readings. A URL host never has the
	// "net(" of a mysql DSN.
	if scheme != "" && (!ok || emptyNet) {
		redactURL(s, scheme, &sp)
	}
	if !ok && scheme == "" {
		redactMySQL(s, false, &sp)
	}
	kv := isKVShaped(s)
	if kv {
		redactKV(s, &sp)
	}
	sweep(s, !kv, &sp)
	return sp.render(s)
}

// span is a byte range [a, b) of the input to replace by "***". An empty
// span inserts "***" (an empty password).
type span struct{ a, b int }

type spans []span

func (sp *spans) add(a, b int) { *sp = append(*sp, span{a, b}) }

// render replaces the union of the spans by "***", one per maximal run.
func (sp spans) render(s string) string {
	if len(sp) == 0 {
		return s
	}
	sort.Slice(sp, func(i, j int) bool {
		if sp[i].a != sp[j].a {
			return sp[i].a < sp[j].a
		}
		return sp[i].b < sp[j].b
	})
	var b strings.Builder
	b.Grow(len(s) + 8)
	last := 0
	cur := sp[0]
	flush := func() {
		b.WriteString(s[last:cur.a])
		b.WriteString(redacted)
		last = cur.b
	}
	for _, x := range sp[1:] {
		if x.a <= cur.b {
			cur.b = max(cur.b, x.b)
			continue
		}
		flush()
		cur = x
	}
	flush()
	b.WriteString(s[last:])
	return b.String()
}

// knownSchemes are URL schemes of database drivers. For these a URL with
// user info but no ':' is a user name, not a mangled mysql DSN.
var knownSchemes = map[string]bool{
	"postgres": true, "postgresql": true, "pgx": true, "mysql": true,
	"mariadb": true, "sqlserver": true, "mssql": true, "oracle": true,
	"clickhouse": true, "cockroach": true, "cockroachdb": true,
	"redshift": true, "snowflake": true, "tidb": true, "spanner": true,
	"mongodb": true, "mongodb+srv": true, "redis": true, "rediss": true,
	"sqlite": true, "sqlite3": true, "file": true, "libsql": true,
	"tcp": true, "unix": true, "http": true, "https": true,
}

// urlScheme returns the scheme of s if s starts with "scheme://".
func urlScheme(s string) string {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
		case i > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		case i > 0 && c == ':' && strings.HasPrefix(s[i:], "://"):
			return s[:i]
		default:
			return ""
		}
	}
	return ""
}

// mysqlShape reports whether s looks like a go-sql-driver/mysql DSN with
// user info: an '@' (the last one before the last '/') followed by
// "net(" or directly by the "/" of the database name (emptyNet).
func mysqlShape(s string) (ok, emptyNet bool) {
	end := strings.LastIndexByte(s, '/')
	slash := end >= 0
	if !slash {
		end = len(s)
	}
	at := strings.LastIndexByte(s[:end], '@')
	if at < 0 {
		return false, false
	}
	net := s[at+1 : end]
	if net == "" {
		return slash, true
	}
	j := 0
	for j < len(net) && (isAlnum(net[j]) || net[j] == '_') {
		j++
	}
	return j > 0 && j < len(net) && net[j] == '(', false
}

// redactMySQL hides the password of "user:password@..." where the '@' is
// the last one before the last '/' (as the mysql driver splits it). When
// shaped is false (a string of unknown format), only an '@' before the
// first '?' counts, so that an '@' in parameters is not mistaken for the
// end of a password.
func redactMySQL(s string, shaped bool, sp *spans) {
	end := strings.LastIndexByte(s, '/')
	if end < 0 {
		end = len(s)
	}
	if !shaped {
		if q := strings.IndexByte(s[:end], '?'); q >= 0 {
			end = q
		}
	}
	at := strings.LastIndexByte(s[:end], '@')
	if at < 0 {
		return
	}
	if c := strings.IndexByte(s[:at], ':'); c >= 0 {
		sp.add(c+1, at)
	}
}

// redactURL hides the password in the user info of a scheme:// URL.
func redactURL(s, scheme string, sp *spans) {
	start := len(scheme) + len("://")
	r := s[start:]
	q := strings.IndexAny(r, "?#")
	if q < 0 {
		q = len(r)
	}
	at := strings.LastIndexByte(r[:q], '@')
	if at < 0 {
		// No '@' before the query: the password itself may contain '?'
		// or '#'. Decide from the authority: "user:pass" (not
		// "host:port") followed later by an '@' is user info.
		hostEnd := strings.IndexAny(r, "/?#")
		if hostEnd < 0 {
			hostEnd = len(r)
		}
		auth := r[:hostEnd]
		if c := strings.LastIndexByte(auth, ':'); c >= 0 {
			if a2 := strings.IndexByte(r[hostEnd:], '@'); a2 >= 0 {
				mid := r[hostEnd : hostEnd+a2]
				if !allDigits(auth[c+1:]) || !strings.Contains(mid, "=") {
					at = hostEnd + a2
				}
			}
		}
	}
	if at < 0 {
		return
	}
	// A raw '@' in the password: extend over any further '@' not
	// separated from this one by a '/' or an '=' (a path or a parameter).
	for {
		t := r[at+1:]
		a2 := strings.IndexByte(t, '@')
		if a2 < 0 || strings.ContainsAny(t[:a2], "/=") {
			break
		}
		at += 1 + a2
	}
	c := strings.IndexByte(r[:at], ':')
	if c < 0 {
		// "scheme://user@host": a user name only, unless the "scheme" is
		// really a mysql user whose password starts with "//": redact
		// more when the scheme is not a known one or the host is empty
		// ("mysqluser://pw@/db" is a valid mysql DSN).
		if !knownSchemes[strings.ToLower(scheme)] || strings.HasPrefix(r[at+1:], "/") {
			redactMySQL(s, false, sp)
		}
		return
	}
	sp.add(start+c+1, start+at)
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// isKeyByte reports whether b may appear in a key of a key=value pair.
func isKeyByte(b byte) bool {
	return isAlnum(b) || b == '_' || b == '-' || b == '.' || b == '%'
}

// isKVShaped reports whether s starts (after whitespace) with "key=", as a
// libpq connection string does.
func isKVShaped(s string) bool {
	i := 0
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	return looksLikeKeyEq(s, i)
}

// looksLikeKeyEq reports whether s[i:] starts with "key=" (whitespace
// allowed before '=').
func looksLikeKeyEq(s string, i int) bool {
	j := i
	for j < len(s) && isKeyByte(s[j]) {
		j++
	}
	if j == i {
		return false
	}
	for j < len(s) && isSpace(s[j]) {
		j++
	}
	return j < len(s) && s[j] == '='
}

// redactKV hides secret values of a libpq key=value string: pairs are
// separated by whitespace (or ';'), values are bare or single-quoted with
// backslash escapes, and whitespace after '=' is skipped.
func redactKV(s string, sp *spans) {
	n := len(s)
	i := 0
	for i < n {
		for i < n && (isSpace(s[i]) || s[i] == ';') {
			i++
		}
		if i >= n {
			return
		}
		ks := i
		for i < n && isKeyByte(s[i]) {
			i++
		}
		key := s[ks:i]
		j := i
		for j < n && isSpace(s[j]) {
			j++
		}
		if key == "" || j >= n || s[j] != '=' {
			// Not a pair: skip this token.
			if i == ks {
				i = skipTokenByte(s, i)
			}
			continue
		}
		j++ // '='
		v := j
		for v < n && isSpace(s[v]) {
			v++
		}
		if isSecretKey(key) {
			end := secretEnd(s, v, false)
			sp.add(j, end)
			i = end
			continue
		}
		i = valueEnd(s, v)
	}
}

// skipTokenByte skips one byte of a token that is not a pair, skipping a
// whole quoted section if it starts one.
func skipTokenByte(s string, i int) int {
	if s[i] == '\'' {
		return skipQuoted(s, i)
	}
	return i + 1
}

// valueEnd returns the end of a libpq value starting at v: after the
// closing quote of a quoted value, or at whitespace or ';' for a bare one.
func valueEnd(s string, v int) int {
	if v < len(s) && s[v] == '\'' {
		return skipQuoted(s, v)
	}
	for v < len(s) && !isSpace(s[v]) && s[v] != ';' {
		v++
	}
	return v
}

// skipQuoted returns the index after the quoted section starting at the
// quote s[i], or len(s) if it is unterminated. A backslash escapes the
// next byte.
func skipQuoted(s string, i int) int {
	q := s[i]
	for i++; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case q:
			return i + 1
		}
	}
	return len(s)
}

// secretEnd returns the end of a secret value starting at v. To redact more
// rather than less, the value runs up to a separator that is followed by
// another "key=" (or the end): whitespace always separates, and so do '&'
// and ';' when amp is set. Quoted sections (single or double quotes, with
// backslash escapes) are skipped whole.
func secretEnd(s string, v int, amp bool) int {
	isSep := func(c byte) bool { return isSpace(c) || amp && (c == '&' || c == ';') }
	p := v
	for p < len(s) {
		c := s[p]
		switch {
		case c == '\'' || c == '"':
			p = skipQuoted(s, p)
		case isSep(c):
			q := p
			for q < len(s) && isSep(s[q]) {
				q++
			}
			if q >= len(s) || looksLikeKeyEq(s, q) {
				return p
			}
			p = q
		default:
			p++
		}
	}
	return len(s)
}

// isSweepBoundary reports whether a key may start after byte b.
func isSweepBoundary(b byte) bool {
	if isSpace(b) {
		return true
	}
	switch b {
	case ';', '&', '?', ',', '\'', '"', '(', '[', '{':
		return true
	}
	return false
}

// sweep hides the value of every secret key=value pair found anywhere in
// s: URL query and mysql parameters, ';'-separated pairs, and pairs
// embedded in other values. With amp set, '&' and ';' separate values too.
func sweep(s string, amp bool, sp *spans) {
	n := len(s)
	i := 0
	for i < n {
		if !isKeyByte(s[i]) {
			i++
			continue
		}
		ks := i
		for i < n && isKeyByte(s[i]) {
			i++
		}
		if ks > 0 && !isSweepBoundary(s[ks-1]) {
			continue
		}
		j := i
		for j < n && isSpace(s[j]) {
			j++
		}
		if j >= n || s[j] != '=' || !isSecretKey(s[ks:i]) {
			continue
		}
		j++ // '='
		v := j
		for v < n && isSpace(s[v]) {
			v++
		}
		end := secretEnd(s, v, amp)
		sp.add(j, end)
		i = end
	}
}

// isSecretKey reports whether the value of key is a secret (see Redact).
func isSecretKey(key string) bool {
	if strings.IndexByte(key, '%') >= 0 && len(key) <= 256 {
		if u, err := url.QueryUnescape(key); err == nil {
			key = u
		}
	}
	k := strings.ToLower(key)
	if strings.Contains(k, "passw") || strings.Contains(k, "secret") || strings.Contains(k, "token") {
		return true
	}
	for _, w := range strings.FieldsFunc(k, func(r rune) bool {
		return !('a' <= r && r <= 'z' || '0' <= r && r <= '9')
	}) {
		if w == "pw" || w == "pwd" || strings.HasPrefix(w, "pass") ||
			strings.HasSuffix(w, "pass") || strings.HasSuffix(w, "pwd") {
			return true
		}
	}
	return false
}
