// Package token encodes a causal session's position as a session token
// (rwpool.SessionToken) and reads it back (rwpool.WithSessionToken).
//
// A token is base64url without padding (URL-, header- and cookie-safe) of:
//
//	version  1 byte, 1
//	cluster  4 bytes, big-endian: a tag of the cluster that made the
//	         token (0: the cluster offers no identity)
//	position replication.Position's binary form
//	checksum 4 bytes: CRC-32C of everything before
//
// It carries no DSN, host name or secret: a replication position and a
// hash. A PostgreSQL token is at most 20 bytes (27 characters); a MariaDB
// one 10 bytes plus at most 25 per replication domain (a single-domain
// cluster: at most 35 bytes, 47 characters). Decode refuses anything else
// (MaxLen, the version, the checksum, a non-canonical position, trailing
// bytes): a token comes from outside the process.
package token

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"hash/crc32"

	"github.com/rwpool/rwpool/internal/replication"
)

// Version is the token format Encode writes and Decode reads. A format
// change gets a new version; Decode keeps reading the old ones for as long
// as tokens made with them can be in flight.
const Version = 1

// MaxLen bounds the text Decode reads, before it decodes anything: a
// MariaDB token of MaxBinaryDomains domains, or a MySQL one of a GTID set
// of MaxBinaryGTIDSet bytes, fits.
const MaxLen = 4096

// Token is what a session token says.
type Token struct {
	Cluster uint32               // the cluster's tag; 0 when unknown
	Pos     replication.Position // not zero
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
	b := append(buf[:0], Version)
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
	if err != nil || len(b) < 1+4+2+4 {
		return Token{}, ErrMalformed
	}
	if b[0] != Version {
		return Token{}, ErrVersion
	}
	body, sum := b[:len(b)-4], binary.BigEndian.Uint32(b[len(b)-4:])
	if crc32.Checksum(body, castagnoli) != sum {
		return Token{}, ErrMalformed
	}
	p, rest, err := replication.DecodeBinary(body[5:])
	if err != nil || len(rest) != 0 {
		return Token{}, ErrMalformed
	}
	return Token{Cluster: binary.BigEndian.Uint32(body[1:5]), Pos: p}, nil
}

// ClusterTag turns a cluster's identity (PostgreSQL's system identifier)
// into the tag tokens carry: 0 for none, else a non-zero hash.
func ClusterTag(identity string) uint32 {
	if identity == "" {
		return 0
	}
	return max(crc32.Checksum([]byte(identity), castagnoli), 1)
}
