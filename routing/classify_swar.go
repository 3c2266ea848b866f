package routing

import "math/bits"

// Eight bytes at a time: the fast path finds the end of a word or a quoted
// identifier without a loop whose exit the branch predictor keeps missing.

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// load8 returns q[i:i+8] as a little-endian word; i+8 <= len(q).
func load8(q string, i int) uint64 {
	b := q[i : i+8]
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}

// wordBytes returns msb set in each byte of x that continues a word
// (wordCont: letters, digits, _, $, bytes >= 0x80). Every sum stays within
// its byte, so the test is exact per byte.
func wordBytes(x uint64) uint64 {
	t := x &^ msb
	u := t | 0x20*lsb // ASCII letters to lower case
	letter := (u + (0x80-'a')*lsb) &^ (u + (0x80-'z'-1)*lsb)
	digit := (t + (0x80-'0')*lsb) &^ (t + (0x80-'9'-1)*lsb)
	under := ^((t ^ '_'*lsb) + 0x7f*lsb)
	dollar := ^((t ^ '$'*lsb) + 0x7f*lsb)
	return (x | letter | digit | under | dollar) & msb
}

// eqBytes returns msb set in each byte of x equal to c.
func eqBytes(x uint64, c byte) uint64 {
	v := x ^ uint64(c)*lsb
	return ^((v &^ msb) + 0x7f*lsb | v) & msb
}

// wordEnd returns the index of the first byte at or after j that does not
// continue a word.
func wordEnd(q string, j int) int {
	for j+8 <= len(q) {
		if m := ^wordBytes(load8(q, j)) & msb; m != 0 {
			return j + bits.TrailingZeros64(m)>>3
		}
		j += 8
	}
	for j < len(q) && wordCont[q[j]] {
		j++
	}
	return j
}

// identEnd returns the index of the closing quote of the quoted identifier
// opening at q[i] when it comes within 16 bytes and the identifier is not
// empty and has no doubled quote and, outside DialectPostgres, no
// backslash; 0 otherwise.
func identEnd(q string, i int, d Dialect) int {
	c := q[i]
	for j := i + 1; j <= i+9 && j+8 <= len(q); j += 8 {
		x := load8(q, j)
		m := eqBytes(x, c)
		if d != DialectPostgres {
			m |= eqBytes(x, '\\')
		}
		if m == 0 {
			continue
		}
		e := j + bits.TrailingZeros64(m)>>3
		if q[e] != c || e == i+1 || e+1 < len(q) && q[e+1] == c {
			return 0
		}
		return e
	}
	return 0
}
