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
	case formOf(s) == formMySQL:
		if _, netAddr, _ := mysqlParts(s); strings.HasPrefix(netAddr, "tcp(") || strings.HasPrefix(netAddr, "unix(") {
			if end := strings.IndexByte(netAddr, ')'); end > 0 {
				return splitHostPort(netAddr[strings.IndexByte(netAddr, '(')+1 : end])
			}
		}
		return "", ""
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
// forms Address reads, told apart by their start, never by what a value
// holds: a URL (scheme://…) has its host list replaced; libpq's
// key=value form gets host= and port= appended, which the drivers read
// as overriding earlier ones (hostaddr= too, when the DSN has one); a
// go-sql-driver/mysql DSN has its address replaced, or added to
// "user@/db"; a DSN of no known form gets host= and port= appended, as
// the key=value form. A port of "" keeps the DSN's port. It refuses what
// it cannot point elsewhere for sure: a Unix socket, a URL whose query
// names the host or port, a hostaddr= with a host that is not an IP
// address. Its errors never hold the DSN.
func (n Node) WithAddress(host, port string) (Node, error) {
	if host == "" || strings.ContainsAny(host, " \t\n'\\/@()?#,=") || strings.ContainsAny(port, " \t\n'\\/@()?#,:=") {
		return n, errors.New("rwpool: dsn: invalid address " + strconv.Quote(host+":"+port))
	}
	s := strings.TrimSpace(n.DSN)
	hp := func(oldPort string) string {
		if port == "" {
			port = oldPort
		}
		if port == "" {
			return bracket(host)
		}
		return net.JoinHostPort(host, port)
	}
	switch formOf(s) {
	case formURL:
		i := strings.Index(s, "://") + 3
		start, end, ok := urlHost(s[i:])
		if !ok {
			return n, errors.New("rwpool: dsn: a URL whose user or password holds an unescaped '/' cannot be pointed at a host")
		}
		if q := strings.IndexByte(s[i+end:], '?'); q >= 0 {
			query := s[i+end+q+1:]
			if f := strings.IndexByte(query, '#'); f >= 0 {
				query = query[:f]
			}
			vals, err := url.ParseQuery(query)
			if err != nil || vals.Has("host") || vals.Has("hostaddr") || vals.Has("port") {
				return n, errors.New("rwpool: dsn: a URL whose query names the host or port cannot be pointed at another")
			}
		}
		_, oldPort := splitHostPort(s[i+start : i+end])
		n.DSN = s[:i+start] + hp(oldPort) + s[i+end:]
		return n, nil
	case formKV, formUnknown:
		// Of no form known here, key=value appended, as a driver of
		// libpq's syntax reads them, is the best guess.
		var hasAddr bool
		for _, f := range kvFields(s) {
			if k, _, _ := strings.Cut(f, "="); strings.TrimSpace(k) == "hostaddr" {
				hasAddr = true
			}
		}
		if hasAddr && net.ParseIP(host) == nil {
			return n, errors.New("rwpool: dsn: a DSN with hostaddr= can be pointed only at an IP address, not " + strconv.Quote(host))
		}
		_, oldPort := n.Address()
		if port == "" {
			port = oldPort
		}
		s += " host=" + host
		if port != "" {
			s += " port=" + port
		}
		if hasAddr {
			s += " hostaddr=" + host
		}
		n.DSN = s
		return n, nil
	case formMySQL:
		head, netAddr, rest := mysqlParts(s)
		switch {
		case netAddr == "" || netAddr == "tcp":
			n.DSN = head + "tcp(" + hp("3306") + ")" + rest
			return n, nil
		case strings.HasPrefix(netAddr, "tcp(") && strings.HasSuffix(netAddr, ")"):
			_, oldPort := splitHostPort(netAddr[4 : len(netAddr)-1])
			n.DSN = head + "tcp(" + hp(oldPort) + ")" + rest
			return n, nil
		}
	}
	return n, errors.New("rwpool: dsn: a go-sql-driver/mysql address of a network other than tcp (a Unix socket) cannot be pointed at a host")
}

// The forms of node DSN that Address and WithAddress know.
const (
	formUnknown = iota
	formURL     // scheme://[user[:password]@]host[:port][/…][?…]
	formKV      // key=value key=value (libpq)
	formMySQL   // [user[:password]@][net[(addr)]]/dbname[?params] (go-sql-driver/mysql)
)

// formOf tells a DSN's form by its start, as the drivers do: what a value
// holds ("://" or "@tcp(" in a password) never changes it.
func formOf(s string) int {
	s = strings.TrimSpace(s)
	word := 0
	for word < len(s) && (isAlnum(s[word]) || s[word] == '_' || word > 0 && (s[word] == '+' || s[word] == '-' || s[word] == '.')) {
		word++
	}
	switch {
	case word > 0 && strings.HasPrefix(s[word:], "://"):
		return formURL
	case word > 0 && strings.HasPrefix(strings.TrimLeft(s[word:], " \t"), "="):
		return formKV
	case strings.Contains(s, "/") && isMySQLNet(s):
		return formMySQL
	}
	return formUnknown
}

// isMySQLNet reports whether what lies between a go-sql-driver/mysql
// DSN's user info and its database is a network and address the driver
// takes: nothing, "tcp", or net(addr).
func isMySQLNet(s string) bool {
	_, netAddr, _ := mysqlParts(s)
	if netAddr == "" || netAddr == "tcp" {
		return true
	}
	open := strings.IndexByte(netAddr, '(')
	if open <= 0 || !strings.HasSuffix(netAddr, ")") {
		return false
	}
	for i := 0; i < open; i++ {
		if !isAlnum(netAddr[i]) {
			return false
		}
	}
	return true
}

// urlHost returns where the host list of a URL's authority (rest: what
// follows "://") starts and ends: after the last '@' before the first
// '/' (libpq and pgx end the user info there, so a password may hold a raw
// '?' or '#'), up to the first '/', '?' or '#' after it. It fails when
// url.Parse reads another authority (a '/' in the user info).
func urlHost(rest string) (start, end int, ok bool) {
	slash := strings.IndexByte(rest, '/')
	if slash < 0 {
		slash = len(rest)
	}
	start = strings.LastIndexByte(rest[:slash], '@') + 1
	end = slash
	if j := strings.IndexAny(rest[start:slash], "?#"); j >= 0 {
		end = start + j
	}
	if slash < len(rest) && strings.Contains(rest[slash:], "@") && start == 0 {
		if at := strings.IndexByte(rest, '@'); at > slash && !strings.ContainsAny(rest[slash:at], "?#") {
			return 0, 0, false // "user:pa/ss@host": the user info holds a '/'
		}
	}
	return start, end, true
}

// mysqlParts splits a go-sql-driver/mysql DSN as the driver does: the
// database starts at the last '/', the user info ends at the last '@'
// before it; what lies between is the network and address. head ends
// with the '@' (or is empty), rest starts with the '/'.
func mysqlParts(s string) (head, netAddr, rest string) {
	slash := strings.LastIndexByte(s, '/')
	at := strings.LastIndexByte(s[:slash], '@')
	return s[:at+1], s[at+1 : slash], s[slash:]
}

// bracket writes an IPv6 address as a URL host.
func bracket(host string) string {
	if strings.Contains(host, ":") {
		return "[" + host + "]"
	}
	return host
}
