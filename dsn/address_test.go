package dsn

import "testing"

func TestNodeAddress(t *testing.T) {
	for _, c := range []struct{ dsn, host, port string }{
		{"postgres://app:s3cret@db1.example:5433/shop?sslmode=disable", "db1.example", "5433"},
		{"postgresql://app@[::1]:5432/shop", "::1", "5432"},
		{"postgres://app:pw@db2/shop", "db2", ""},
		{"host=db3 port=6432 user=app password='p w' dbname=shop", "db3", "6432"},
		{"user=app password=secret host='/var/run/postgresql'", "/var/run/postgresql", ""},
		{"app:pw@tcp(127.0.0.1:3306)/shop?parseTime=true", "127.0.0.1", "3306"},
		{"app:p@ss@tcp(db4:3307)/shop", "db4", "3307"},
		{"app:pw@unix(/tmp/mysql.sock)/shop", "/tmp/mysql.sock", ""},
		{"dbname=shop", "", ""},
		{"", "", ""},
	} {
		host, port := Node{DSN: c.dsn}.Address()
		if host != c.host || port != c.port {
			t.Errorf("%q: %q %q, want %q %q", c.dsn, host, port, c.host, c.port)
		}
		for _, secret := range []string{"s3cret", "secret", "p w", "pw", "p@ss"} {
			if host == secret || port == secret {
				t.Errorf("%q: the address shows %q", c.dsn, secret)
			}
		}
	}
}
