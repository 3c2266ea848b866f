package dsn

import (
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/lib/pq"
)

// TestDiscoverRedactCommaPassword: a discover source whose URL has a
// password containing ',' (a sub-delim RFC 3986 allows raw in user info)
// must not show it in String() nor GoString(). Discovery.Redacted splits
// the target at every ',' before redacting, so neither half looks like a
// URL with a password and both halves are printed as they are.
func TestDiscoverRedactCommaPassword(t *testing.T) {
	const pw = "Se,cr3tPW"
	c, err := Parse("driver=pgx;primary='host=db1 user=app';discover='patroni:http://admin:" + pw + "@10.0.0.1:8008'")
	if err != nil {
		t.Fatal(err)
	}
	for what, s := range map[string]string{"String": c.String(), "GoString": c.GoString(), "Redacted": c.Discover[0].Redacted()} {
		if strings.Contains(s, pw) || strings.Contains(s, "cr3tPW") {
			t.Errorf("%s() leaks the password %q: %s", what, pw, s)
		}
	}
}

// TestWithAddressURLPasswordDelims: libpq and pgx end a URL's user
// info at the first '@' before the first '/', so a raw '?' or '#' in a
// password is part of the password (dsn.Address knows: "a user or
// password with an unescaped '/', '?' or '#' moved the authority").
// WithAddress cuts the authority at the first '?' or '#' instead, and
// replaces the password's head with the new address: the DSN it returns
// still reaches the primary's host.
func TestWithAddressURLPasswordDelims(t *testing.T) {
	for _, dsn := range []string{
		"postgres://app:pa?ss@db1:5432/shop",
		"postgres://app:pa#ss@db1:5432/shop",
	} {
		orig, err := pgconn.ParseConfig(dsn)
		if err != nil {
			t.Fatalf("pgx rejects the primary DSN %q: %v", dsn, err)
		}
		if orig.Host != "db1" || orig.Password == "" {
			t.Fatalf("pgx reads %q as host %q password %q", dsn, orig.Host, orig.Password)
		}
		n, err := Node{DSN: dsn}.WithAddress("10.0.0.7", "5433")
		if err != nil {
			t.Errorf("WithAddress(%q): %v", dsn, err)
			continue
		}
		got, err := pgconn.ParseConfig(n.DSN)
		if err != nil {
			t.Errorf("WithAddress(%q) = %q, which pgx rejects: %v", dsn, n.DSN, err)
			continue
		}
		if got.Host != "10.0.0.7" || got.Port != 5433 || got.Password != orig.Password || got.User != orig.User {
			t.Errorf("WithAddress(%q, 10.0.0.7, 5433) = %q: pgx connects to %s:%d as %q/%q, want 10.0.0.7:5433 as %q/%q",
				dsn, n.DSN, got.Host, got.Port, got.User, got.Password, orig.User, orig.Password)
		}
	}
}

// TestWithAddressURLQueryHost: libpq and pgx take host= and port=
// from a URL's query string too, over the authority
// ("postgresql:///shop?host=/var/run/postgresql", libpq's documented way
// to name a Unix socket or a host in a URL). WithAddress replaces only the
// authority: the DSN it returns still reaches the primary (or its Unix
// socket, which WithAddress promises to refuse).
func TestWithAddressURLQueryHost(t *testing.T) {
	for _, dsn := range []string{
		"postgres:///shop?host=db1&port=5432&user=app",
		"postgres://app@/shop?host=/var/run/postgresql",
	} {
		n, err := Node{DSN: dsn}.WithAddress("10.0.0.7", "5433")
		if err != nil {
			continue // refusing is fine
		}
		got, err := pgconn.ParseConfig(n.DSN)
		if err != nil {
			t.Errorf("WithAddress(%q) = %q, which pgx rejects: %v", dsn, n.DSN, err)
			continue
		}
		if got.Host != "10.0.0.7" || got.Port != 5433 {
			t.Errorf("WithAddress(%q, 10.0.0.7, 5433) = %q: pgx connects to %s:%d", dsn, n.DSN, got.Host, got.Port)
		}
	}
}

// TestWithAddressHostaddrName: with libpq's key=value form, a
// hostaddr= wins over host= (libpq, lib/pq: "If both host and hostaddr
// are given, the value for hostaddr gives the server network address").
// WithAddress replaces a DSN's hostaddr only when the new host is an IP
// address; pointed at a host name (Patroni reports members by the host
// of their conn_url, often a name), the DSN keeps the primary's hostaddr
// and still reaches the primary. Address() on the result says so too.
func TestWithAddressHostaddrName(t *testing.T) {
	const dsn = "host=db1.example hostaddr=10.0.0.1 port=5432 user=app dbname=shop"
	n, err := Node{DSN: dsn}.WithAddress("db2.example", "5433")
	if err != nil {
		return // refusing is fine
	}
	if h, p := n.Address(); h != "db2.example" || p != "5433" {
		t.Errorf("WithAddress(%q, db2.example, 5433) = %q, whose Address() is %s:%s", dsn, n.DSN, h, p)
	}
	cfg, err := pq.NewConfig(n.DSN)
	if err != nil {
		t.Fatalf("lib/pq rejects %q: %v", n.DSN, err)
	}
	if cfg.Hostaddr.IsValid() && cfg.Hostaddr.String() == "10.0.0.1" {
		t.Errorf("WithAddress(%q, db2.example, 5433) = %q: lib/pq connects to hostaddr %s (the primary)", dsn, n.DSN, cfg.Hostaddr)
	}
}

// TestWithAddressMySQLParams: a go-sql-driver/mysql DSN whose
// parameters contain '@' is not recognised (mysqlAddress looks after the
// last '@' of the whole DSN, the driver after the last '@' before the
// last '/'): WithAddress takes it for libpq's key=value form and appends
// " host=… port=…" to the last parameter's value. The mysql driver still
// reaches the primary.
func TestWithAddressMySQLParams(t *testing.T) {
	const dsn = "app:pw@tcp(db1:3306)/shop?parseTime=true&connectionAttributes=owner:ops@example"
	orig, err := mysql.ParseDSN(dsn)
	if err != nil || orig.Addr != "db1:3306" {
		t.Fatalf("mysql reads %q as %v, %v", dsn, orig, err)
	}
	n, err := Node{DSN: dsn}.WithAddress("10.0.0.7", "3307")
	if err != nil {
		return // refusing is fine
	}
	got, err := mysql.ParseDSN(n.DSN)
	if err != nil {
		t.Fatalf("WithAddress(%q) = %q, which mysql rejects: %v", dsn, n.DSN, err)
	}
	if got.Addr != "10.0.0.7:3307" {
		t.Errorf("WithAddress(%q, 10.0.0.7, 3307) = %q: mysql connects to %s", dsn, n.DSN, got.Addr)
	}
}

// TestWithAddressKVPasswordLooksLikeOtherForm: WithAddress picks the
// DSN form by substrings found anywhere in the DSN ("://" for a URL, an
// "@tcp(" for go-sql-driver/mysql), values included. A libpq key=value
// DSN whose password contains "://" or "@tcp(" is rewritten inside its
// password: the result still has host=db1 (the primary) and a wrong
// password, instead of host=/port= appended.
func TestWithAddressKVPasswordLooksLikeOtherForm(t *testing.T) {
	for _, dsn := range []string{
		"host=db1 port=5432 user=app password='Pw://x' dbname=shop",
		"host=db1 port=5432 user=app password='Pw@tcp(x)' dbname=shop",
	} {
		orig, err := pgconn.ParseConfig(dsn)
		if err != nil || orig.Host != "db1" {
			t.Fatalf("pgx reads %q as %v, %v", dsn, orig, err)
		}
		n, err := Node{DSN: dsn}.WithAddress("10.0.0.7", "5433")
		if err != nil {
			continue // refusing is fine
		}
		got, err := pgconn.ParseConfig(n.DSN)
		if err != nil {
			t.Errorf("WithAddress(%q) = %q, which pgx rejects: %v", dsn, n.DSN, err)
			continue
		}
		if got.Host != "10.0.0.7" || got.Port != 5433 || got.Password != orig.Password {
			t.Errorf("WithAddress(%q, 10.0.0.7, 5433) = %q: pgx connects to %s:%d with password %q, want 10.0.0.7:5433 with %q",
				dsn, n.DSN, got.Host, got.Port, got.Password, orig.Password)
		}
	}
}
