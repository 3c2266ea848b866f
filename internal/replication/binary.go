package replication

import (
	"encoding/binary"
	"errors"
	"math"
)

// The binary form of a Position is what session tokens carry
// (internal/token): short, canonical (one Position has one form, so a
// token round-trips byte for byte) and checked strictly when read back,
// since a token comes from outside the process.
//
//	Postgres: 'p', the LSN as a uvarint; 'P' for a position whose
//	          timeline is known: the timeline, then the LSN, as uvarints
//	MariaDB:  'm', the number of domains as a uvarint, then for each
//	          domain in increasing order its id, server id and sequence
//	          number as uvarints
//	MySQL:    'y', the length of the GTID set's text as a uvarint, then
//	          the text (String's form; GTID sets are long, and rare in
//	          tokens: they are bounded, not compressed)
const (
	binPostgres = 'p'
	binTimeline = 'P'
	binMariaDB  = 'm'
	binMySQL    = 'y'

	// MaxBinaryDomains bounds the MariaDB domains of a decoded Position;
	// MaxBinaryGTIDSet bounds the text of a decoded MySQL GTID set.
	MaxBinaryDomains = 64
	MaxBinaryGTIDSet = 2048
)

// errBinary is the one error of DecodeBinary: its callers report any
// malformed input alike, and the bytes are nobody's to print.
var errBinary = errors.New("replication: malformed binary position")

// AppendBinary appends p's binary form to b. The zero Position has none:
// it appends nothing.
func (p Position) AppendBinary(b []byte) []byte {
	if p.IsZero() {
		return b
	}
	switch p.flavor {
	case Postgres:
		if p.tli != 0 {
			b = append(b, binTimeline)
			b = binary.AppendUvarint(b, uint64(p.tli))
		} else {
			b = append(b, binPostgres)
		}
		b = binary.AppendUvarint(b, p.lsn)
	case MariaDB:
		b = append(b, binMariaDB)
		b = binary.AppendUvarint(b, uint64(len(p.seqs)))
		for _, d := range p.seqs {
			b = binary.AppendUvarint(b, uint64(d.domain))
			b = binary.AppendUvarint(b, uint64(d.server))
			b = binary.AppendUvarint(b, d.seq)
		}
	case MySQL:
		s := p.String()
		b = append(b, binMySQL)
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	return b
}

// DecodeBinary reads a Position in AppendBinary's form from the start of b
// and returns it with the bytes that follow it. It accepts only the
// canonical form of a non-zero Position.
func DecodeBinary(b []byte) (Position, []byte, error) {
	if len(b) == 0 {
		return Position{}, nil, errBinary
	}
	kind, b := b[0], b[1:]
	var ok bool
	switch kind {
	case binPostgres, binTimeline:
		var tli, lsn uint64
		if kind == binTimeline {
			if tli, b, ok = uvarint(b, math.MaxUint32); !ok || tli == 0 {
				return Position{}, nil, errBinary
			}
		}
		if lsn, b, ok = uvarint(b, math.MaxUint64); !ok || lsn == 0 {
			return Position{}, nil, errBinary
		}
		return Position{flavor: Postgres, tli: uint32(tli), lsn: lsn}, b, nil
	case binMariaDB:
		var n uint64
		if n, b, ok = uvarint(b, MaxBinaryDomains); !ok || n == 0 {
			return Position{}, nil, errBinary
		}
		p := Position{flavor: MariaDB, seqs: make([]domainSeq, 0, n)}
		for i := range n {
			var d, srv, seq uint64
			d, b, ok = uvarint(b, math.MaxUint32)
			if ok {
				srv, b, ok = uvarint(b, math.MaxUint32)
			}
			if ok {
				seq, b, ok = uvarint(b, math.MaxUint64)
			}
			if !ok || (i > 0 && uint32(d) <= p.seqs[i-1].domain) {
				return Position{}, nil, errBinary
			}
			p.seqs = append(p.seqs, domainSeq{domain: uint32(d), server: uint32(srv), seq: seq})
		}
		return p, b, nil
	case binMySQL:
		var n uint64
		if n, b, ok = uvarint(b, MaxBinaryGTIDSet); !ok || n == 0 || uint64(len(b)) < n {
			return Position{}, nil, errBinary
		}
		text := string(b[:n])
		p, err := ParseMySQLGTIDSet(text)
		if err != nil || p.IsZero() || p.String() != text {
			return Position{}, nil, errBinary
		}
		return p, b[n:], nil
	}
	return Position{}, nil, errBinary
}

// uvarint reads a canonical (shortest) uvarint no greater than limit.
func uvarint(b []byte, limit uint64) (uint64, []byte, bool) {
	v, n := binary.Uvarint(b)
	if n <= 0 || v > limit || n != len(binary.AppendUvarint(nil, v)) {
		return 0, nil, false
	}
	return v, b[n:], true
}
