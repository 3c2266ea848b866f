// Package token encodes a causal session's position as a session token
// (rwpool.SessionToken) and reads it back (rwpool.WithSessionToken).
//
// A token is base64url without padding (URL-, header- and cookie-safe) of:
//
//	version  1 byte: 1, or 2 for a token with flags
//	flags    (version 2 only) 1 byte: bit 0, pending (Token.Pending);
//	         bits 1-2, in a token with no position, its kind of server
//	         (Token.Flavor: 0 unknown, 1 PostgreSQL, 2 MariaDB, 3 MySQL;
//	         a position says its own, and these bits are then zero);
//	         the other bits are zero
//	cluster  4 bytes, big-endian: a tag of the cluster that made the
//	         token (0: the cluster offers no identity)
//	position replication.Position's binary form (in version 2, absent
//	         when the token says only that a write is pending)
//	checksum 4 bytes: CRC-32C of everything before
//
// Encode writes version 1 whenever no flag is set, so tokens that need no
// flag stay as short as before. It carries no DSN, host name or secret: a
// replication position and a hash. A PostgreSQL token is at most 21 bytes
// (28 characters); a MariaDB one 11 bytes plus at most 25 per replication
// domain (a single-domain cluster: at most 36 bytes, 48 characters).
// Decode refuses anything else (MaxLen, the version, the checksum, unknown
// flags, a non-canonical position, trailing bytes): a token comes from
// outside the process.
package token

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"hash/crc32"

	"github.com/rwpool/rwpool/internal/replication"
)

// Version is the newest token format Encode writes and Decode reads. A
// format change gets a new version; Decode keeps reading the old ones for
// as long as tokens made with them can be in flight.
const Version = 2

// version1 is the format without flags, still written for tokens that
// need none.
const version1 = 1

// flagPending is Token.Pending.
const flagPending = 1

// flavorShift places Token.Flavor in the flags byte of a token with no
// position; flavorMask is what it may take there.
const (
	flavorShift = 1
	flavorMask  = 3 << flavorShift
)

// MaxLen bounds the text Decode reads, before it decodes anything: a
// MariaDB token of MaxBinaryDomains domains, or a MySQL one of a GTID set
// of MaxBinaryGTIDSet bytes, fits.
const MaxLen = 4096

// Token is what a session token says.
type Token struct {
	Cluster uint32               // the cluster's tag; 0 when unknown
	Pos     replication.Position // not zero unless Pending

	// Pending says the token's session made a write whose position the
	// token could not say (the primary could not be asked when it was
	// made): whoever resumes it must read the primary's position before
	// it trusts a replica, as the session itself would have.
	Pending bool

	// Flavor is the kind of server of a token with no position (one that
	// says only that a write is pending), so that it is refused on
	// another kind as one with a position is; Unknown where its maker
	// did not know it. A token with a position has its position's: Pos's
	// flavor is what Encode writes and Decode returns then.
	Flavor replication.Flavor
}

var (
	// ErrMalformed is returned for text that is not a token.
	ErrMalformed = errors.New("malformed")
	// ErrVersion is returned for a token of a version Decode does not read.
	ErrVersion = errors.New("unknown version")
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Encode returns t's text.
func Encode(t Token) string {
	var buf [64]byte
	b := append(buf[:0], version1)
	if t.Pending {
		flags := byte(flagPending) // version 2 only when a flag is set
		if t.Pos.IsZero() && t.Flavor <= replication.MySQL {
			flags |= byte(t.Flavor) << flavorShift
		}
		b = append(buf[:0], Version, flags)
	}
	b = binary.BigEndian.AppendUint32(b, t.Cluster)
	b = t.Pos.AppendBinary(b)
	b = binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
	return base64.RawURLEncoding.EncodeToString(b)
}

// Decode reads a token's text. Its errors wrap ErrMalformed or ErrVersion
// and never quote the text.
func Decode(s string) (Token, error) {
	if len(s) > MaxLen {
		return Token{}, ErrMalformed
	}
	// The decoder skips line breaks; a token has none, and one text is
	// one token.
	for i := range len(s) {
		if c := s[i]; !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return Token{}, ErrMalformed
		}
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(s)
	if err != nil || len(b) == 0 {
		return Token{}, ErrMalformed
	}
	head := 1 // version, and in version 2 the flags
	switch b[0] {
	case version1:
	case Version:
		head = 2
	default:
		return Token{}, ErrVersion
	}
	if len(b) < head+4+4 {
		return Token{}, ErrMalformed
	}
	body, sum := b[:len(b)-4], binary.BigEndian.Uint32(b[len(b)-4:])
	if crc32.Checksum(body, castagnoli) != sum {
		return Token{}, ErrMalformed
	}
	var t Token
	if head == 2 {
		// Only the flags this version defines, and only a token that
		// needs one: Encode writes version 1 otherwise, and one text
		// per token keeps them comparable.
		if body[1]&^flavorMask != flagPending {
			return Token{}, ErrMalformed
		}
		t.Pending = true
		t.Flavor = replication.Flavor(body[1] & flavorMask >> flavorShift)
	}
	t.Cluster = binary.BigEndian.Uint32(body[head : head+4])
	pos := body[head+4:]
	if len(pos) == 0 && t.Pending {
		return t, nil // a pending write, and nothing else known but its kind of server
	}
	if t.Flavor != replication.Unknown {
		return Token{}, ErrMalformed // a position says its own kind
	}
	p, rest, err := replication.DecodeBinary(pos)
	if err != nil || len(rest) != 0 {
		return Token{}, ErrMalformed
	}
	t.Pos, t.Flavor = p, p.Flavor()
	return t, nil
}

// ClusterTag turns a cluster's identity (PostgreSQL's system identifier)
// into the tag tokens carry: 0 for none, else a non-zero hash.
func ClusterTag(identity string) uint32 {
	if identity == "" {
		return 0
	}
	return max(crc32.Checksum([]byte(identity), castagnoli), 1)
}
