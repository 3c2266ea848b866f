package replication

import (
	"strings"
	"testing"
)

func mustParse(t *testing.T, f Flavor, s string) Position {
	t.Helper()
	p, err := Parse(f, s)
	if err != nil {
		t.Fatalf("Parse(%s, %q): %v", f, s, err)
	}
	return p
}

func TestParseRoundTrip(t *testing.T) {
	for _, tt := range []struct {
		f       Flavor
		in, out string
	}{
		{Postgres, "0/D16540", "0/D16540"},
		{Postgres, "16/b374d848", "16/B374D848"},
		{MariaDB, "0-55406-13", "0-55406-13"},
		{MariaDB, " 1-2-7,0-1-42 ", "0-1-42,1-2-7"},
		{MariaDB, "0-1-5,0-2-9", "0-2-9"}, // one domain twice: the higher wins
		{MySQL, "3E11FA47-71CA-11E1-9E33-C80AA9429562:1-5:7", "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5:7"},
		{MySQL, "3e11fa47-71ca-11e1-9e33-c80aa9429562:6-9:1-5,\n" +
			"aaaaaaaa-71ca-11e1-9e33-c80aa9429562:1-3",
			"3e11fa47-71ca-11e1-9e33-c80aa9429562:1-9,aaaaaaaa-71ca-11e1-9e33-c80aa9429562:1-3"},
		{MySQL, "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-2:blue:1-3:red:4",
			"3e11fa47-71ca-11e1-9e33-c80aa9429562:1-2,3e11fa47-71ca-11e1-9e33-c80aa9429562:blue:1-3," +
				"3e11fa47-71ca-11e1-9e33-c80aa9429562:red:4"},
	} {
		p := mustParse(t, tt.f, tt.in)
		if got := p.String(); got != tt.out {
			t.Errorf("Parse(%q).String() = %q, want %q", tt.in, got, tt.out)
		}
		if p.Flavor() != tt.f {
			t.Errorf("Parse(%q).Flavor() = %s", tt.in, p.Flavor())
		}
		if q := mustParse(t, tt.f, p.String()); !q.Covers(p) || !p.Covers(q) {
			t.Errorf("%q does not round-trip: %q", tt.in, q)
		}
	}
}

func TestParseEmptyIsZero(t *testing.T) {
	for _, f := range []Flavor{Postgres, MariaDB, MySQL} {
		if p := mustParse(t, f, ""); !p.IsZero() {
			t.Errorf("%s: empty parses to %v", f, p)
		}
	}
}

func TestParseRejects(t *testing.T) {
	for _, tt := range []struct {
		f  Flavor
		in string
	}{
		{Postgres, "D16540"}, {Postgres, "0/xyz"}, {Postgres, "1/2/3"}, {Postgres, "100000000/0"},
		{MariaDB, "0-1"}, {MariaDB, "0-1-2-3"}, {MariaDB, "a-1-2"}, {MariaDB, "0-1-2,"}, {MariaDB, "0-1-2'; DROP TABLE t; --"},
		{MySQL, "nouuid:1-5"}, {MySQL, "3e11fa47-71ca-11e1-9e33-c80aa9429562"}, {MySQL, "3e11fa47-71ca-11e1-9e33-c80aa9429562:5-1"},
		{MySQL, "3e11fa47-71ca-11e1-9e33-c80aa9429562:0"}, {MySQL, "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5'"},
		{MySQL, "3e11fa47-71ca-11e1-9e33-c80aa9429562:tag"}, {MySQL, "3e11fa47-71ca-11e1-9e33-c80aa9429562:1:x-y:2"},
		{Unknown, "anything"},
	} {
		if p, err := Parse(tt.f, tt.in); err == nil {
			t.Errorf("Parse(%s, %q) = %v, want error", tt.f, tt.in, p)
		}
	}
}

func TestCovers(t *testing.T) {
	u := "3e11fa47-71ca-11e1-9e33-c80aa9429562"
	for _, tt := range []struct {
		f      Flavor
		p, q   string
		covers bool
	}{
		{Postgres, "0/100", "0/100", true},
		{Postgres, "0/100", "0/FF", true},
		{Postgres, "0/FF", "0/100", false},
		{Postgres, "1/0", "0/FFFFFFFF", true},
		{Postgres, "0/100", "", true},
		{Postgres, "", "0/1", false},
		{MariaDB, "0-1-10", "0-1-10", true},
		{MariaDB, "0-1-10", "0-2-9", true}, // a failover changed the server id, not the order
		{MariaDB, "0-1-10", "0-1-11", false},
		{MariaDB, "0-1-10", "0-1-5,1-1-1", false}, // a domain it has never seen
		{MariaDB, "0-1-10,1-3-4", "1-3-4", true},
		{MySQL, u + ":1-10", u + ":3-7", true},
		{MySQL, u + ":1-5:7-10", u + ":4-8", false}, // 6 is missing
		{MySQL, u + ":1-10", "aaaaaaaa-71ca-11e1-9e33-c80aa9429562:1", false},
	} {
		p, q := mustParse(t, tt.f, tt.p), mustParse(t, tt.f, tt.q)
		if got := p.Covers(q); got != tt.covers {
			t.Errorf("%s %q covers %q = %v, want %v", tt.f, tt.p, tt.q, got, tt.covers)
		}
	}
	pg, maria := mustParse(t, Postgres, "9/0"), mustParse(t, MariaDB, "0-1-1")
	if pg.Covers(maria) || maria.Covers(pg) {
		t.Error("positions of different flavors cover each other")
	}
}

func TestSameSources(t *testing.T) {
	for _, tt := range []struct {
		f    Flavor
		p, q string
		same bool
	}{
		{MariaDB, "0-2-12", "0-2-10", true},
		{MariaDB, "0-1-12", "0-2-10", false}, // as far, in another server's history
		{MariaDB, "0-2-12,1-1-4", "0-2-10,1-1-4", true},
		{MariaDB, "0-2-12,1-3-4", "0-2-10,1-1-4", false},
		{MariaDB, "1-1-4", "0-2-10", false}, // not the domain at all
		{Postgres, "0/100", "0/FF", true},   // LSNs name no source
		{MySQL, "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5", "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-3", true},
	} {
		p, q := mustParse(t, tt.f, tt.p), mustParse(t, tt.f, tt.q)
		if got := p.SameSources(q); got != tt.same {
			t.Errorf("%s %q.SameSources(%q) = %v, want %v", tt.f, tt.p, tt.q, got, tt.same)
		}
	}
	if mustParse(t, Postgres, "0/1").SameSources(mustParse(t, MariaDB, "0-1-1")) {
		t.Error("positions of different flavors have the same sources")
	}
}

func TestMerge(t *testing.T) {
	u := "3e11fa47-71ca-11e1-9e33-c80aa9429562"
	for _, tt := range []struct {
		f          Flavor
		p, q, want string
	}{
		{Postgres, "0/100", "0/80", "0/100"},
		{Postgres, "", "0/80", "0/80"},
		{MariaDB, "0-1-10", "0-1-12,1-2-3", "0-1-12,1-2-3"},
		{MariaDB, "0-1-10,1-2-5", "1-2-3", "0-1-10,1-2-5"},
		{MySQL, u + ":1-5", u + ":6-9:12", u + ":1-9:12"},
	} {
		got := mustParse(t, tt.f, tt.p).Merge(mustParse(t, tt.f, tt.q))
		if got.String() != tt.want {
			t.Errorf("%q merge %q = %q, want %q", tt.p, tt.q, got, tt.want)
		}
	}
}

func TestCount(t *testing.T) {
	u := "3e11fa47-71ca-11e1-9e33-c80aa9429562"
	for _, tt := range []struct {
		f    Flavor
		s    string
		want uint64
	}{
		{Postgres, "1/10", 1<<32 + 16},
		{MariaDB, "0-1-10,1-2-5", 15},
		{MySQL, u + ":1-5:7", 6},
	} {
		if got := mustParse(t, tt.f, tt.s).Count(); got != tt.want {
			t.Errorf("Count(%q) = %d, want %d", tt.s, got, tt.want)
		}
	}
}

// FuzzParse checks that whatever a server answers, a parsed position
// prints only characters safe between SQL quotes, and reparses to itself.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"0/D16540", "0-1-42,1-2-7", "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5:tag:7"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, fl := range []Flavor{Postgres, MariaDB, MySQL} {
			p, err := Parse(fl, s)
			if err != nil {
				continue
			}
			out := p.String()
			if strings.Trim(out, "0123456789abcdefABCDEF-/:,_ghijklmnopqrstuvwxyz") != "" {
				t.Fatalf("%s: %q prints unsafe %q", fl, s, out)
			}
			q, err := Parse(fl, out)
			if err != nil || !q.Covers(p) || !p.Covers(q) {
				t.Fatalf("%s: %q prints %q, which reparses to %v (%v)", fl, s, out, q, err)
			}
		}
	})
}

func TestHolds(t *testing.T) {
	my := func(s string) Position {
		p, err := ParseMariaDBGTID(s)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		p, q         string
		covers, hold bool
	}{
		{"0-1-50", "0-1-42", true, true},
		{"0-1-50", "0-3-42", true, false}, // another server's history, past it by number
		{"0-3-50", "0-1-42", true, false}, // the new primary's replica, asked for the old one's write
		{"0-1-40", "0-1-42", false, false},
		{"0-1-50,1-2-7", "0-1-42,1-2-7", true, true},
		{"0-1-50,1-4-9", "0-1-42,1-2-7", true, false},
	} {
		p, q := my(tc.p), my(tc.q)
		if got := p.Covers(q); got != tc.covers {
			t.Errorf("%s covers %s: %v, want %v", tc.p, tc.q, got, tc.covers)
		}
		if got := p.Holds(q); got != tc.hold {
			t.Errorf("%s holds %s: %v, want %v", tc.p, tc.q, got, tc.hold)
		}
	}
	a, _ := ParseLSN("0/3000")
	b, _ := ParseLSN("0/2000")
	if !a.Holds(b) || b.Holds(a) {
		t.Error("PostgreSQL: Holds is not Covers")
	}
	if !a.Holds(Position{}) {
		t.Error("the zero position is not held by everything")
	}
}

func TestParsePostgresWithTimeline(t *testing.T) {
	p, err := Parse(Postgres, "0/E83B38 3")
	if err != nil || p.String() != "0/E83B38" || p.Timeline() != 3 {
		t.Fatalf("Parse(\"0/E83B38 3\") = %s on timeline %d, %v; want 0/E83B38 on 3", p, p.Timeline(), err)
	}
	if p, err := Parse(Postgres, "0/E83B38"); err != nil || p.Timeline() != 0 {
		t.Fatalf("an LSN alone: timeline %d, %v; want 0 (unknown)", p.Timeline(), err)
	}
	if _, err := Parse(Postgres, "0/E83B38 x"); err == nil {
		t.Fatal("a bad timeline parsed")
	}
	old, _ := Parse(Postgres, "0/F00000 1")
	if old.Covers(p) {
		t.Error("a replica past the LSN on timeline 1 covers a write on timeline 3")
	}
}
