package routing

import "strings"

// The fast path: most queries are plain reads, and proving that takes less
// work than classifying. plainRead lexes just enough to know that nothing
// the statement rules look at is there: no keyword lookup or token
// bookkeeping per word, only a length-and-first-byte filter. On anything
// else it gives up and Classify runs the full scanner, so the fast path
// never decides a verdict the scanner would not (TestFastPath* and
// FuzzClassify compare the two).

// Byte classes of the fast path.
const (
	pSkip   uint8 = iota // whitespace, operators, parentheses: no effect on a plain read
	pWord                // starts a word or a number
	pQuote               // '
	pDQuote              // " as a string (MySQL)
	pIdent               // " (Postgres) or ` (MySQL): a quoted identifier
	pDollar              // $ in Postgres
	pMinus               // -
	pSlash               // /
	pHash                // # in MySQL
	pSemi                // ;
	pBail                // left to the scanner
)

// plainClass holds the byte classes per Dialect. Bytes one dialect reads
// differently from the other are pBail under DialectGeneric, where the fast
// path must also prove the MySQL pass would agree.
var plainClass = func() (t [3][256]uint8) {
	for d := range t {
		c := &t[d]
		for b := range c {
			if wordCont[b] {
				c[b] = pWord
			}
		}
		c['\''] = pQuote
		c['"'] = pIdent
		c['-'] = pMinus
		c['/'] = pSlash
		c[';'] = pSemi
		switch Dialect(d) {
		case DialectPostgres:
			c['$'] = pDollar // # ` @ are operators
		case DialectMySQL:
			c['"'] = pDQuote
			c['`'] = pIdent // $ starts a word
			c['#'] = pHash
			c['@'] = pBail
		case DialectGeneric:
			c['$'] = pDollar
			c['`'] = pBail
			c['#'] = pBail
			c['@'] = pBail
		}
	}
	return t
}()

// plainLead reports whether the word w is one a plain read starts with:
// SELECT, WITH, SHOW, VALUES or TABLE.
func plainLead(w string) bool {
	switch len(w) {
	case 4:
		return eqLower(w, "with") || eqLower(w, "show")
	case 5:
		return eqLower(w, "table")
	case 6:
		return eqLower(w, "select") || eqLower(w, "values")
	}
	return false
}

// triggerWords are the words that may make a read more than plain: the
// keywords the statement rules act on in a read, and the functions
// funcFlags knows (keep in sync; a test checks it). Inside strings or as
// column names they only send the query to the full scanner.
var triggerWords = [...]string{
	"for", "share", "into", "sql_calc_found_rows",
	"insert", "update", "delete", "merge",
	"currval", "found_rows", "get_lock", "is_free_lock", "is_used_lock",
	"lastval", "last_insert_id", "lo_creat", "lo_create", "lo_import",
	"lo_unlink", "lo_put", "lo_from_bytea", "nextval", "pg_notify",
	"pg_current_xact_id", "row_count", "release_lock", "release_all_locks",
	"setval", "set_config", "txid_current",
}

// maybeTrigger has bit n of entry c set when a word of length n starting
// with byte c may be a trigger word; other words need no closer look.
var maybeTrigger = func() (t [256]uint64) {
	set := func(c byte, n int) {
		t[c] |= 1 << n
		t[c&^0x20] |= 1 << n
	}
	for _, w := range triggerWords {
		set(w[0], len(w))
	}
	// pg_advisory_* and pg_try_advisory_*, up to funcFlags' longest name.
	for n := len("pg_advisory_"); n <= 32; n++ {
		set('p', n)
	}
	set('e', 1) // E'...' escape strings
	return t
}()

// trigger reports whether the word w, followed by rest, needs the full
// scanner: a trigger word, or the E of an E'...' string.
func trigger(w, rest string) bool {
	if len(w) == 1 {
		return len(rest) > 0 && rest[0] == '\''
	}
	switch lookupKeyword(w) {
	case kwFor, kwShare, kwInto, kwSQLCalcFoundRows, kwInsert, kwUpdate, kwDelete, kwMerge:
		return true
	}
	return funcFlags(w) != 0
}

// plainRead reports whether q is one read statement (SELECT, WITH, SHOW,
// VALUES or TABLE) that the full scanner would classify as a plain read,
// {Replica, RuleRead, false}: no hint, nothing unterminated, one statement,
// no trigger word, no user variable and, for DialectGeneric, nothing the
// dialects read differently. False means "not proven", not "not a read".
func plainRead(q string, d Dialect) bool {
	i := plainStart(q, d)
	if i < 0 {
		return false
	}
	cls := &plainClass[d]
	n := len(q)
	for i < n {
		c := q[i]
		k := cls[c]
		if k == pSkip {
			i++
			continue
		}
		if k == pWord {
			j := i + 1
			for j < n && wordCont[q[j]] {
				j++
			}
			if maybeTrigger[c]>>uint(j-i)&1 != 0 && trigger(q[i:j], q[j:]) {
				return false
			}
			i = j
			continue
		}
		if k == pIdent {
			// The common quoted identifier: a plain word.
			j := i + 1
			for j < n && wordCont[q[j]] {
				j++
			}
			if j < n && q[j] == c && (j+1 >= n || q[j+1] != c) && j > i+1 {
				if maybeTrigger[q[i+1]]>>uint(j-i-1)&1 != 0 && funcFlags(q[i+1:j]) != 0 {
					return false
				}
				i = j + 1
				continue
			}
		}
		if k == pDollar && i+1 < n && byteClass[q[i+1]] == cDigit {
			// A $1 placeholder.
			i += 2
			for i < n && byteClass[q[i]] == cDigit {
				i++
			}
			continue
		}
		j := plainToken(q, i, k, d)
		if j < 0 {
			return false
		}
		i = j
	}
	return true
}

// plainStart returns the index after the first keyword of q, past
// whitespace and comments, when that keyword starts a read; -1 otherwise.
func plainStart(q string, d Dialect) int {
	cls := &plainClass[d]
	n := len(q)
	for i := 0; i < n; {
		c := q[i]
		switch cls[c] {
		case pSkip:
			if byteClass[c] != cSpace {
				return -1
			}
			i++
		case pWord:
			switch c | 0x20 {
			case 's', 'w', 'v', 't':
			default:
				return -1 // INSERT, UPDATE, ...: no need to read the word
			}
			j := i + 1
			for j < n && wordCont[q[j]] {
				j++
			}
			if !plainLead(q[i:j]) {
				return -1
			}
			return j
		case pMinus, pSlash, pHash:
			j := plainComment(q, i, d, true)
			if j <= i {
				return -1 // needs the scanner, or an operator
			}
			i = j
		default:
			return -1
		}
	}
	return -1
}

// plainToken skips the token of class k (neither pSkip nor pWord) at q[i]
// and returns the index after it, or -1 to leave q to the full scanner.
func plainToken(q string, i int, k uint8, d Dialect) int {
	n := len(q)
	switch k {
	case pQuote, pDQuote:
		return plainQuoted(q, i, d, false)
	case pIdent:
		return plainQuoted(q, i, d, true)
	case pDollar:
		// $1 placeholders; a dollar quote is left to the scanner.
		j := i + 1
		for j < n && byteClass[q[j]] == cDigit {
			j++
		}
		if j == i+1 {
			return -1
		}
		return j
	case pMinus, pSlash, pHash:
		j := plainComment(q, i, d, false)
		if j == i {
			return i + 1 // an operator
		}
		return j
	case pSemi:
		// A trailing ";" ends the only statement; anything after it is left
		// to the scanner.
		for j := i + 1; j < n; j++ {
			if byteClass[q[j]] != cSpace {
				return -1
			}
		}
		return n
	}
	return -1
}

// plainQuoted skips the string or quoted identifier whose opening quote is
// at q[i] and returns the index after it, or -1 when it is unterminated, has
// a backslash, or, for an identifier (ident), may name a function funcFlags
// knows.
func plainQuoted(q string, i int, d Dialect, ident bool) int {
	quote := q[i]
	j := i + 1
	for {
		k := strings.IndexByte(q[j:], quote)
		if k < 0 {
			return -1 // unterminated
		}
		k += j
		if d != DialectPostgres && strings.IndexByte(q[j:k], '\\') >= 0 {
			return -1 // an escape in MySQL, a divergence under generic
		}
		if k+1 < len(q) && q[k+1] == quote {
			j = k + 2 // a doubled quote
			continue
		}
		if ident && funcFlags(q[i+1:k]) != 0 {
			return -1
		}
		return k + 1
	}
}

// plainComment skips the comment starting at q[i] (at -, / or #) and
// returns the index after it; i if q[i] starts no comment; -1 when the
// comment needs the full scanner: unterminated, nested, executable, a
// possible hint (lead: no token seen yet), or read differently by the
// dialects under DialectGeneric.
func plainComment(q string, i int, d Dialect, lead bool) int {
	n := len(q)
	switch q[i] {
	case '-':
		if i+1 >= n || q[i+1] != '-' {
			return i
		}
		if i+2 < n && q[i+2] > ' ' {
			// Postgres reads a comment, MySQL an operator.
			switch d {
			case DialectMySQL:
				return i
			case DialectGeneric:
				return -1
			}
		}
		return lineEnd(q, i)
	case '#':
		return lineEnd(q, i) // only MySQL gets here
	}
	if i+1 >= n || q[i+1] != '*' {
		return i
	}
	body := i + 2
	if body < n && (q[body] == '!' || q[body] == 'M' && body+1 < n && q[body+1] == '!') && d != DialectPostgres {
		return -1 // MySQL runs the body
	}
	// The end, as blockComment finds it: the first * followed by /, unless
	// a / before it opens a nested comment.
	e := body
	for {
		k := strings.IndexByte(q[e:], '*')
		if k < 0 {
			return -1
		}
		e += k
		if d != DialectMySQL && e-1 >= body && q[e-1] == '/' {
			return -1 // nested in Postgres
		}
		if e+1 < n && q[e+1] == '/' {
			break
		}
		e++
	}
	if lead && mayBeHint(q[body:e]) {
		return -1
	}
	return e + 2
}

// mayBeHint reports whether a comment body could be a /*rwpool:...*/ hint,
// as noteHint reads one. Most bodies are ruled out by their first byte.
func mayBeHint(c string) bool {
	for k := 0; k < len(c); k++ {
		b := c[k]
		if byteClass[b] == cSpace {
			continue
		}
		if b|0x20 != 'r' && b < 0x80 {
			return false
		}
		c = strings.TrimSpace(c) // also Unicode spaces, as noteHint
		return len(c) >= len("rwpool") && eqLower(c, "rwpool")
	}
	return false
}
