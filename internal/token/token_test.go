package token

import (
	"errors"
	"strings"
	"testing"

	"github.com/rwpool/rwpool/internal/replication"
)

func mustParse(t testing.TB, f replication.Flavor, s string) replication.Position {
	t.Helper()
	p, err := replication.Parse(f, s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRoundTripAndSize(t *testing.T) {
	for _, c := range []struct {
		f    replication.Flavor
		pos  string
		max  int // characters
		safe bool
	}{
		{replication.Postgres, "FFFFFFFF/FFFFFFFF", 27, true},
		{replication.Postgres, "0/3000060", 27, true},
		{replication.MariaDB, "4294967295-4294967295-18446744073709551615", 47, true},
		{replication.MariaDB, "0-1-1234567", 47, true},
	} {
		tok := Token{Cluster: ClusterTag("7312345678901234567"), Pos: mustParse(t, c.f, c.pos)}
		s := Encode(tok)
		if len(s) > c.max || len(s) > 64 {
			t.Errorf("%s: token %q has %d characters, want at most %d", c.pos, s, len(s), c.max)
		}
		if strings.ContainsAny(s, "+/=;, \"") {
			t.Errorf("%s: token %q is not URL- and cookie-safe", c.pos, s)
		}
		got, err := Decode(s)
		if err != nil || got.Cluster != tok.Cluster || got.Pos.String() != tok.Pos.String() {
			t.Errorf("%s: Decode(%q) = %+v, %v", c.pos, s, got, err)
		}
	}
}

func TestDecodeRejects(t *testing.T) {
	good := Encode(Token{Cluster: 7, Pos: mustParse(t, replication.Postgres, "16/B374D848")})
	flipped := []byte(good)
	flipped[8] ^= 0x01
	if flipped[8] == good[8] {
		t.Fatal("no flip")
	}
	cases := map[string]string{
		"empty":      "",
		"garbage":    "not a token!",
		"truncated":  good[:len(good)-3],
		"bit flip":   string(flipped),
		"padding":    good + "==",
		"1 MiB":      strings.Repeat("A", 1<<20),
		"other text": "eyJhbGciOiJIUzI1NiJ9",
	}
	for name, s := range cases {
		if _, err := Decode(s); !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrVersion) {
			t.Errorf("%s: err %v, want ErrMalformed or ErrVersion", name, err)
		}
	}
	// Every single-bit change of a good token is refused: the checksum
	// and the canonical position leave none through.
	raw := []byte(good)
	for i := range raw {
		for bit := range 6 {
			b := append([]byte(nil), raw...)
			b[i] ^= 1 << bit
			if tok, err := Decode(string(b)); err == nil {
				t.Errorf("byte %d bit %d flipped: decoded %+v", i, bit, tok)
			}
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(Encode(Token{Cluster: 1, Pos: mustParse(f, replication.Postgres, "16/B374D848")}))
	f.Add(Encode(Token{Pos: mustParse(f, replication.MariaDB, "0-1-42,1-2-7")}))
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		tok, err := Decode(s)
		if err != nil {
			return
		}
		if tok.Pos.IsZero() {
			t.Fatalf("%q decodes to the zero position", s)
		}
		if again := Encode(tok); again != s {
			t.Fatalf("%q decodes to %+v, which encodes as %q", s, tok, again)
		}
	})
}
