package token

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"hash/crc32"
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
		for _, pending := range []bool{false, true} {
			max := c.max
			if pending {
				max++ // the flags byte
			}
			tok := Token{Cluster: ClusterTag("7312345678901234567"), Pos: mustParse(t, c.f, c.pos), Pending: pending}
			roundTrip(t, tok, max)
		}
	}
	// A token that says only that a write is pending, of a kind of
	// server or not.
	roundTrip(t, Token{Cluster: 9, Pending: true}, 16)
	for _, f := range []replication.Flavor{replication.Postgres, replication.MariaDB, replication.MySQL} {
		roundTrip(t, Token{Cluster: 9, Pending: true, Flavor: f}, 16)
	}
}

// A pending token's kind of server lives in its flags only when it has no
// position: one with a position and flavour bits is not a text Encode
// writes, and is refused.
func TestDecodeRefusesFlavorBesidePosition(t *testing.T) {
	pos := mustParse(t, replication.Postgres, "0/3000060")
	b := []byte{Version, flagPending | byte(replication.Postgres)<<flavorShift}
	b = binary.BigEndian.AppendUint32(b, 7)
	b = pos.AppendBinary(b)
	b = binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
	if _, err := Decode(base64.RawURLEncoding.EncodeToString(b)); !errors.Is(err, ErrMalformed) {
		t.Errorf("a token with a position and flavour bits: %v, want ErrMalformed", err)
	}
}

// roundTrip checks that tok encodes as a safe text of at most max
// characters, which decodes back to tok.
func roundTrip(t *testing.T, tok Token, max int) {
	t.Helper()
	s := Encode(tok)
	if len(s) > max || len(s) > 64 {
		t.Errorf("%+v: token %q has %d characters, want at most %d", tok, s, len(s), max)
	}
	if strings.ContainsAny(s, "+/=;, \"") {
		t.Errorf("%+v: token %q is not URL- and cookie-safe", tok, s)
	}
	got, err := Decode(s)
	want := tok.Flavor
	if !tok.Pos.IsZero() {
		want = tok.Pos.Flavor()
	}
	if err != nil || got.Cluster != tok.Cluster || got.Pos.String() != tok.Pos.String() || got.Pending != tok.Pending || got.Flavor != want {
		t.Errorf("Decode(%q) = %+v, %v; want %+v", s, got, err, tok)
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
	// Version 2 with no flag set (Encode writes version 1 then), or with
	// one this version does not define; version 1 with no position.
	cases["no flag"] = reversion(t, good, Version, 0)
	cases["unknown flag"] = reversion(t, good, Version, 2)
	cases["unknown flag beside pending"] = reversion(t, good, Version, flagPending|8)
	cases["v1 without position"] = Encode(Token{Cluster: 7})
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

// reversion returns good's token re-encoded as version v with flags,
// with a valid checksum: only the rules on versions and flags refuse it.
func reversion(t *testing.T, good string, v, flags byte) string {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(good)
	if err != nil {
		t.Fatal(err)
	}
	body := append([]byte{v, flags}, b[1:len(b)-4]...)
	body = binary.BigEndian.AppendUint32(body, crc32.Checksum(body, castagnoli))
	return base64.RawURLEncoding.EncodeToString(body)
}

func FuzzDecode(f *testing.F) {
	f.Add(Encode(Token{Cluster: 1, Pos: mustParse(f, replication.Postgres, "16/B374D848")}))
	f.Add(Encode(Token{Pos: mustParse(f, replication.MariaDB, "0-1-42,1-2-7")}))
	f.Add(Encode(Token{Cluster: 1, Pos: mustParse(f, replication.Postgres, "16/B374D848"), Pending: true}))
	f.Add(Encode(Token{Cluster: 1, Pending: true}))
	f.Add(Encode(Token{Cluster: 1, Pending: true, Flavor: replication.MariaDB}))
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		tok, err := Decode(s)
		if err != nil {
			return
		}
		if tok.Pos.IsZero() && !tok.Pending {
			t.Fatalf("%q decodes to the zero position", s)
		}
		if again := Encode(tok); again != s {
			t.Fatalf("%q decodes to %+v, which encodes as %q", s, tok, again)
		}
	})
}
