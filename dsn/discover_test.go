package dsn

import (
	"strings"
	"testing"
	"time"
)

func TestParseDiscover(t *testing.T) {
	c, err := Parse("driver=pgx;primary='host=db1 user=app';" +
		"discover='srv://127.0.0.1:8600/_pg._tcp.db' every=2s weight=3 name=k8s;" +
		"discover=patroni:http://u:pw@h:8008,http://h2:8008")
	if err != nil {
		t.Fatal(err)
	}
	want := []Discovery{
		{Source: "srv://127.0.0.1:8600/_pg._tcp.db", Name: "k8s", Weight: 3, Every: 2 * time.Second},
		{Source: "patroni:http://u:pw@h:8008,http://h2:8008", Weight: 1, Every: 10 * time.Second},
	}
	if len(c.Discover) != 2 || c.Discover[0] != want[0] || c.Discover[1] != want[1] {
		t.Fatalf("Discover = %#v, want %#v", c.Discover, want)
	}
	if got := c.Discover[1].DisplayName(); got != "patroni" {
		t.Errorf("DisplayName = %q, want patroni", got)
	}
	// FormatDSN round-trips; String and GoString never show the password.
	again, err := Parse(c.FormatDSN())
	if err != nil {
		t.Fatalf("Parse(FormatDSN()): %v", err)
	}
	if len(again.Discover) != 2 || again.Discover[0] != want[0] || again.Discover[1] != want[1] {
		t.Fatalf("round trip: %#v", again.Discover)
	}
	for _, s := range []string{c.String(), c.GoString()} {
		if strings.Contains(s, "pw@") || !strings.Contains(s, "u:***@h:8008") {
			t.Errorf("not redacted: %s", s)
		}
	}
}

func TestParseDiscoverErrors(t *testing.T) {
	for _, tc := range []struct{ dsn, want string }{
		{"discover=nocolon", "want scheme:target"},
		{"discover='srv:'", "want scheme:target"},
		{"discover='1x:y'", "want scheme:target"},
		{"discover=srv:a every=0s", "every: must be positive"},
		{"discover=srv:a weight=-1", "weight: must be >= 0"},
		{"discover=srv:a;discover=srv:b", "duplicate discover name"},
		{"discover=srv:a name=x/y", "contains a control character or '/'"},
		{"discover=srv:a name=x name=y", "duplicate discover attribute"},
		{"replica=x every=1s", "only allowed on discover"},
		{"discover='patroni:http://u:secret@h' junk", "unexpected text after discover source"},
	} {
		_, err := Parse("driver=pgx;primary=p;" + tc.dsn)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.dsn, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("%s: error leaks the password: %v", tc.dsn, err)
		}
	}
	var many strings.Builder
	for i := range MaxDiscover + 1 {
		many.WriteString(";discover=srv:a name=n" + string(rune('a'+i)))
	}
	if _, err := Parse("driver=pgx;primary=p" + many.String()); err == nil || !strings.Contains(err.Error(), "too many discover") {
		t.Errorf("%d discover items: err = %v", MaxDiscover+1, err)
	}
}

func TestWithAddress(t *testing.T) {
	for _, tc := range []struct{ dsn, host, port, want string }{
		{"postgres://app:p%40ss@db1:5432/shop?sslmode=disable", "10.0.0.7", "5433", "postgres://app:p%40ss@10.0.0.7:5433/shop?sslmode=disable"},
		{"postgres://app@db1/shop", "10.0.0.7", "", "postgres://app@10.0.0.7/shop"},
		{"postgres://db1:6432", "::1", "", "postgres://[::1]:6432"},
		{"postgres://a,b:5/db", "h", "7", "postgres://h:7/db"},
		{"app:pw@tcp(db1:3306)/shop?parseTime=true", "10.0.0.7", "3307", "app:pw@tcp(10.0.0.7:3307)/shop?parseTime=true"},
		{"app:pw@tcp(db1)/shop", "h", "", "app:pw@tcp(h)/shop"},
		{"app:pw@/shop", "h", "3310", "app:pw@tcp(h:3310)/shop"},
		{"host=db1 port=5432 user=app password='a b' dbname=shop", "10.0.0.7", "5433", "host=db1 port=5432 user=app password='a b' dbname=shop host=10.0.0.7 port=5433"},
		{"user=app dbname=shop", "h", "", "user=app dbname=shop host=h"},
		{"hostaddr=1.2.3.4 port=5 user=app", "10.0.0.7", "", "hostaddr=1.2.3.4 port=5 user=app host=10.0.0.7 port=5 hostaddr=10.0.0.7"},
	} {
		n, err := Node{Name: "r", DSN: tc.dsn}.WithAddress(tc.host, tc.port)
		if err != nil || n.DSN != tc.want {
			t.Errorf("WithAddress(%q, %q, %q) = %q, %v; want %q", tc.dsn, tc.host, tc.port, n.DSN, err, tc.want)
			continue
		}
		if h, p := n.Address(); h != tc.host {
			t.Errorf("Address of %q = %q, %q; want host %q", n.DSN, h, p, tc.host)
		}
	}
	for _, bad := range []struct{ dsn, host string }{
		{"app:pw@unix(/tmp/s)/db", "h"},
		{"host=db1", "h x"},
		{"host=db1", ""},
		{"host=db1", "a'b"},
	} {
		if _, err := (Node{DSN: bad.dsn}).WithAddress(bad.host, "1"); err == nil {
			t.Errorf("WithAddress(%q, %q): no error", bad.dsn, bad.host)
		}
	}
}
