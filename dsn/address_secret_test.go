package dsn

import (
	"strings"
	"testing"
)

func TestAddressNoSecret(t *testing.T) {
	for _, c := range []struct{ dsn, user, pw string }{
		{"postgres://admin:#S3cret@db.example.com:5432/app", "admin", "S3cret"},
		{"postgres://admin:2024?x@db.example.com:5432/app", "admin", "2024"},
		{"postgres://admin:/pw@db.example.com/app", "admin", "pw"},
		{"postgres://admin:p%40ss@db.example.com:5432/app", "admin", "p@ss"},
		{"host=db.example.com user=admin password='a b' port=5432", "admin", "a b"},
		{"admin:p@ss)w(rd@tcp(db.example.com:3306)/app", "admin", "p@ss)w(rd"},
		{"admin:pw@tcp(db.example.com:3306)/app?x=a@b", "admin", "pw"},
		{"user = admin password = S3cret host = db.example.com", "admin", "S3cret"},
		{"host= password=S3cret", "", "S3cret"},
	} {
		h, p := Node{DSN: c.dsn}.Address()
		for _, s := range []string{c.user, c.pw} {
			if s != "" && (strings.Contains(h, s) || strings.Contains(p, s)) {
				t.Errorf("Address(%q) = %q, %q: holds %q", c.dsn, h, p, s)
			}
		}
		t.Logf("Address(%q) = %q, %q", c.dsn, h, p)
	}
}
