package dsn

import (
	"net"
	"net/url"
	"strings"
)

// Address returns the host and the port of the server n's DSN names, as
// OpenTelemetry's server.address and server.port want them: from a URL
// (scheme://user:password@host:port/db), from libpq's key=value form
// (host=… port=…) and from go-sql-driver/mysql's (user:password@tcp(host:port)/db).
// Either is "" where the DSN does not say (a default port, a Unix socket:
// the socket's path is the address). Neither ever holds a user name, a
// password or a database name.
func (n Node) Address() (host, port string) {
	s := strings.TrimSpace(n.DSN)
	switch {
	case strings.Contains(s, "://"):
		u, err := url.Parse(s)
		if err != nil {
			return "", ""
		}
		if u.User == nil && strings.Contains(s, "@") {
			// An '@' url.Parse did not take for the end of a user
			// name: a user or password with an unescaped '/', '?' or
			// '#' moved the authority, whose "host" is then the user.
			return "", ""
		}
		return splitHostPort(u.Host)
	case mysqlAddress(s) != "":
		return splitHostPort(mysqlAddress(s))
	}
	for _, f := range kvFields(s) {
		k, v, _ := strings.Cut(f, "=")
		switch strings.TrimSpace(k) {
		case "host", "hostaddr":
			if host == "" || k == "hostaddr" {
				host = v
			}
		case "port":
			port = v
		}
	}
	return host, port
}

// mysqlAddress returns what a go-sql-driver/mysql DSN has between
// "@tcp(" (or "@unix(") and ")", or "".
func mysqlAddress(s string) string {
	at := strings.LastIndex(s, "@")
	if at < 0 {
		return ""
	}
	rest := s[at+1:]
	open := strings.IndexByte(rest, '(')
	if open < 0 || !strings.HasPrefix(rest, "tcp") && !strings.HasPrefix(rest, "unix") {
		return ""
	}
	end := strings.IndexByte(rest, ')')
	if end < open {
		return ""
	}
	return rest[open+1 : end]
}

// splitHostPort splits "host:port", "[::1]:port" or a bare host.
func splitHostPort(hp string) (host, port string) {
	if h, p, err := net.SplitHostPort(hp); err == nil {
		return h, p
	}
	return strings.Trim(hp, "[]"), ""
}

// kvFields splits libpq's key=value form into its fields, values unquoted
// ('…' with \' and \\ escapes).
func kvFields(s string) []string {
	var out []string
	var b strings.Builder
	inQuote, escaped := false, false
	for _, r := range s {
		switch {
		case escaped:
			b.WriteRune(r)
			escaped = false
		case r == '\\':
			escaped = true
		case r == '\'':
			inQuote = !inQuote
		case (r == ' ' || r == '\t' || r == '\n') && !inQuote:
			if b.Len() > 0 {
				out = append(out, b.String())
				b.Reset()
			}
		default:
			b.WriteRune(r)
		}
	}
	if b.Len() > 0 {
		out = append(out, b.String())
	}
	return out
}
