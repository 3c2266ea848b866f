package dsn

import (
	"errors"
	"net"
	"net/url"
	"strconv"
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
	// A key given twice counts as the drivers count it: the last one.
	var addr string
	for _, f := range kvFields(s) {
		k, v, _ := strings.Cut(f, "=")
		switch strings.TrimSpace(k) {
		case "host":
			host = v
		case "hostaddr":
			addr = v
		case "port":
			port = v
		}
	}
	if addr != "" {
		host = addr
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

// WithAddress returns n with its DSN pointed at host:port, everything
// else (user, password, database, options) kept: how a replica found at
// run time (Discovery) is reached with the primary's DSN. It knows the
// DSN forms Address reads: a URL's host list is replaced, a
// go-sql-driver/mysql address is replaced (or added, to "user@/db"), and
// libpq's key=value form gets host= and port= appended, which the drivers
// read as overriding earlier ones (hostaddr= too, when host is an IP
// address and the DSN has one). A port of "" keeps the DSN's port. It
// fails on a Unix socket address, which names no host. The error never
// holds the DSN.
func (n Node) WithAddress(host, port string) (Node, error) {
	if host == "" || strings.ContainsAny(host, " \t\n'\\/@()?#,") || strings.ContainsAny(port, " \t\n'\\/@()?#,:") {
		return n, errors.New("rwpool: dsn: invalid address " + strconv.Quote(host+":"+port))
	}
	s := n.DSN
	hp := func(oldPort string) string {
		if port == "" {
			port = oldPort
		}
		if port == "" {
			return bracket(host)
		}
		return net.JoinHostPort(host, port)
	}
	switch {
	case strings.Contains(s, "://"):
		i := strings.Index(s, "://") + 3
		end := len(s)
		if j := strings.IndexAny(s[i:], "/?#"); j >= 0 {
			end = i + j
		}
		auth := s[i:end]
		at := strings.LastIndex(auth, "@") + 1
		_, oldPort := splitHostPort(auth[at:])
		n.DSN = s[:i+at] + hp(oldPort) + s[end:]
		return n, nil
	case strings.Contains(s, "@unix("):
		return n, errors.New("rwpool: dsn: a Unix socket address cannot be pointed at a host")
	case mysqlAddress(s) != "":
		at := strings.LastIndex(s, "@")
		open := at + 1 + strings.IndexByte(s[at+1:], '(')
		end := at + 1 + strings.IndexByte(s[at+1:], ')')
		_, oldPort := splitHostPort(s[open+1 : end])
		n.DSN = s[:open+1] + hp(oldPort) + s[end:]
		return n, nil
	case isMySQLNoAddress(s):
		// user:password@/dbname: the default address, made explicit.
		at := strings.LastIndex(s, "@")
		n.DSN = s[:at+1] + "tcp(" + hp("3306") + ")" + s[at+1:]
		return n, nil
	}
	_, oldPort := n.Address()
	if port == "" {
		port = oldPort
	}
	s = strings.TrimRight(s, " \t\n") + " host=" + host
	if port != "" {
		s += " port=" + port
	}
	for _, f := range kvFields(n.DSN) {
		if k, _, _ := strings.Cut(f, "="); strings.TrimSpace(k) == "hostaddr" && net.ParseIP(host) != nil {
			s += " hostaddr=" + host
			break
		}
	}
	n.DSN = strings.TrimLeft(s, " ")
	return n, nil
}

// isMySQLNoAddress reports whether s is a go-sql-driver/mysql DSN without
// an address ("user:password@/dbname").
func isMySQLNoAddress(s string) bool {
	at := strings.LastIndex(s, "@")
	return at >= 0 && strings.HasPrefix(s[at+1:], "/") && !strings.Contains(s[:at], "=")
}

// bracket writes an IPv6 address as a URL host.
func bracket(host string) string {
	if strings.Contains(host, ":") {
		return "[" + host + "]"
	}
	return host
}
