package dsn

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzDiscover: Parse(FormatDSN()) gives back an equal Config for
// DSNs with discover items, String() parses, and keeps the discover items.
func FuzzDiscover(f *testing.F) {
	for _, s := range []string{
		"driver=pgx;primary=p;discover='srv:a b' name='x y' every=1h30m weight=0",
		"driver=pgx;primary=p;discover=srv:a every=1.5s;discover=dns:b:5432 name=d",
		"driver=pgx;primary=p;discover='patroni:http://u:pw@h:8008,http://h2:8008?max_lag_bytes=5' every=2s weight=3 name=k8s",
		"driver=pgx;primary=p;discover='dns://127.0.0.1:8600/x.service.consul:5432' name=consul",
		"driver=pgx;primary=p;discover='x:\\'' name='\\\\'",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := Parse(s)
		if err != nil {
			return
		}
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
		str := c.String()
		r, err := Parse(str)
		if err != nil {
			t.Fatalf("Parse(String()) failed: %v\nString %q", err, str)
		}
		if len(r.Discover) != len(c.Discover) {
			t.Fatalf("Parse(String()) changed the discover items: %q", str)
		}
		for i, d := range c.Discover {
			if r.Discover[i].DisplayName() != d.DisplayName() || r.Discover[i].Every != d.Every || r.Discover[i].Weight != d.Weight {
				t.Fatalf("Parse(String()) changed discover item %d: %#v then %#v", i, d, r.Discover[i])
			}
		}
	})
}
