package replication

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// ParseLSN parses a PostgreSQL LSN such as "16/B374D848". The empty string
// (a NULL from the server) is the zero Position.
func ParseLSN(s string) (Position, error) {
	if s == "" {
		return Position{}, nil
	}
	hi, lo, ok := strings.Cut(s, "/")
	h, err1 := strconv.ParseUint(hi, 16, 32)
	l, err2 := strconv.ParseUint(lo, 16, 32)
	if !ok || err1 != nil || err2 != nil {
		return Position{}, fmt.Errorf("replication: invalid LSN %q", short(s))
	}
	return Position{flavor: Postgres, lsn: h<<32 | l}, nil
}

// ParseMariaDBGTID parses a MariaDB GTID position: comma-separated
// domain-server-sequence triples such as "0-1-42,1-2-7". The empty string
// is the zero Position.
func ParseMariaDBGTID(s string) (Position, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Position{}, nil
	}
	p := Position{flavor: MariaDB}
	for part := range strings.SplitSeq(s, ",") {
		f := strings.Split(strings.TrimSpace(part), "-")
		if len(f) != 3 {
			return Position{}, fmt.Errorf("replication: invalid MariaDB GTID %q", short(s))
		}
		d, err1 := strconv.ParseUint(f[0], 10, 32)
		srv, err2 := strconv.ParseUint(f[1], 10, 32)
		seq, err3 := strconv.ParseUint(f[2], 10, 64)
		if err := errors.Join(err1, err2, err3); err != nil {
			return Position{}, fmt.Errorf("replication: invalid MariaDB GTID %q", short(s))
		}
		ds := domainSeq{domain: uint32(d), server: uint32(srv), seq: seq}
		if i := p.domainIndex(ds.domain); i >= 0 {
			if seq > p.seqs[i].seq {
				p.seqs[i] = ds
			}
			continue
		}
		p.seqs = append(p.seqs, ds)
	}
	sortSeqs(p.seqs)
	return p, nil
}

// ParseMySQLGTIDSet parses a MySQL GTID set such as
// "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5:7,\n...:1-3", tagged GTIDs
// ("uuid:tag:1-5") included. The empty string is the zero Position.
func ParseMySQLGTIDSet(s string) (Position, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Position{}, nil
	}
	bad := func() (Position, error) {
		return Position{}, fmt.Errorf("replication: invalid MySQL GTID set %q", short(s))
	}
	p := Position{flavor: MySQL}
	add := func(source string, ivs []interval) {
		i := slices.IndexFunc(p.sets, func(u uuidSet) bool { return u.source == source })
		if i < 0 {
			p.sets = append(p.sets, uuidSet{source: source, intervals: union(ivs, nil)})
		} else {
			p.sets[i].intervals = union(p.sets[i].intervals, ivs)
		}
	}
	for part := range strings.SplitSeq(s, ",") {
		f := strings.Split(strings.TrimSpace(part), ":")
		if len(f) < 2 || !isUUID(f[0]) {
			return bad()
		}
		uuid := strings.ToLower(f[0])
		source, ivs := uuid, []interval(nil)
		for _, x := range f[1:] {
			if x == "" {
				return bad()
			}
			if !isDigit(x[0]) { // a tag: the intervals after it are its own
				if !isTag(x) || (len(ivs) == 0 && source != uuid) {
					return bad()
				}
				if len(ivs) > 0 {
					add(source, ivs)
				}
				source, ivs = uuid+":"+strings.ToLower(x), nil
				continue
			}
			lo, hi, rng := strings.Cut(x, "-")
			l, err1 := strconv.ParseUint(lo, 10, 64)
			h, err2 := l, error(nil)
			if rng {
				h, err2 = strconv.ParseUint(hi, 10, 64)
			}
			if err1 != nil || err2 != nil || l == 0 || h < l {
				return bad()
			}
			ivs = append(ivs, interval{l, h})
		}
		if len(ivs) == 0 {
			return bad()
		}
		add(source, ivs)
	}
	sortSets(p.sets)
	return p, nil
}

// union merges two interval lists into one sorted list of disjoint,
// non-adjacent intervals.
func union(a, b []interval) []interval {
	all := append(append([]interval(nil), a...), b...)
	slices.SortFunc(all, func(x, y interval) int {
		switch {
		case x.lo < y.lo:
			return -1
		case x.lo > y.lo:
			return 1
		}
		return 0
	})
	out := all[:0]
	for _, iv := range all {
		if n := len(out); n > 0 && iv.lo <= out[n-1].hi+1 {
			out[n-1].hi = max(out[n-1].hi, iv.hi)
			continue
		}
		out = append(out, iv)
	}
	return out
}

func sortSeqs(s []domainSeq) {
	slices.SortFunc(s, func(a, b domainSeq) int { return int(int64(a.domain) - int64(b.domain)) })
}

func sortSets(s []uuidSet) {
	slices.SortFunc(s, func(a, b uuidSet) int { return strings.Compare(a.source, b.source) })
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// isUUID accepts 32 hex digits with or without the four dashes.
func isUUID(s string) bool {
	n := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case isDigit(c) || ('a' <= c && c <= 'f') || ('A' <= c && c <= 'F'):
			n++
		case c == '-':
		default:
			return false
		}
	}
	return n == 32
}

// isTag accepts MySQL's GTID tags: a letter or underscore, then up to 31
// letters, digits or underscores.
func isTag(s string) bool {
	if len(s) > 32 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i] | 0x20
		if !(('a' <= c && c <= 'z') || s[i] == '_' || (i > 0 && isDigit(s[i]))) {
			return false
		}
	}
	return true
}

// short bounds what a parse error echoes of a server's answer.
func short(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}
