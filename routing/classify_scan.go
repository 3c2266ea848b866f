package routing

// lexMode is the set of lexical rules one pass uses. DialectGeneric runs
// both.
type lexMode uint8

const (
	lexPostgres lexMode = iota
	lexMySQL
)

// Byte classes for the scanner's dispatch.
const (
	cOther  uint8 = iota // operator or other punctuation
	cSpace               // space, \t, \n, \v, \f, \r
	cWord                // letter, _, or a byte >= 0x80: starts a word
	cDigit               // starts a number
	cDollar              // $
	cQuote               // '
	cDQuote              // "
	cBack                // `
	cMinus               // -
	cSlash               // /
	cStar                // *
	cHash                // #
	cAt                  // @
	cLParen              // (
	cRParen              // )
	cSemi                // ;
)

var byteClass = func() (t [256]uint8) {
	for c := 'a'; c <= 'z'; c++ {
		t[c] = cWord
		t[c-'a'+'A'] = cWord
	}
	for c := 0x80; c < 0x100; c++ {
		t[c] = cWord
	}
	t['_'] = cWord
	for c := '0'; c <= '9'; c++ {
		t[c] = cDigit
	}
	for _, c := range " \t\n\v\f\r" {
		t[c] = cSpace
	}
	t['$'] = cDollar
	t['\''] = cQuote
	t['"'] = cDQuote
	t['`'] = cBack
	t['-'] = cMinus
	t['/'] = cSlash
	t['*'] = cStar
	t['#'] = cHash
	t['@'] = cAt
	t['('] = cLParen
	t[')'] = cRParen
	t[';'] = cSemi
	return t
}()

// wordCont reports the bytes that continue a word: letters, digits, _, $
// and bytes >= 0x80.
var wordCont = func() (t [256]bool) {
	for c := range t {
		k := byteClass[c]
		t[c] = k == cWord || k == cDigit || c == '$'
	}
	return t
}()

// Hint values.
const (
	hintNone uint8 = iota
	hintPrimary
	hintReplica
)

// scanner holds the state of one classification pass over a query. It lives
// on the caller's stack.
type scanner struct {
	q    string
	mode lexMode

	started      bool  // a token other than ( and ; was seen: hints no longer count
	hint         uint8 // hintNone, hintPrimary or hintReplica
	unterminated bool
	inExec       bool // inside a MySQL /*! ... */ comment, whose body is code
	divergent    bool // saw something the other dialect would read differently
	allRead      bool
	session      bool
	nstmt        int
	first        Decision

	st stmt
}

// scan classifies q under one set of lexical rules. divergent reports that
// q contains something the other set of rules reads differently (only
// computed, and only needed, for lexPostgres).
func scan(q string, mode lexMode) (d Decision, divergent bool) {
	s := scanner{q: q, mode: mode, allRead: true}
	s.run()
	return s.result(), s.divergent
}

// run lexes the whole query, feeding significant tokens to tok and
// statement ends to endStmt.
//
// Tokens that are neither keywords nor parentheses take a fast path once the
// statement has started and no rule waits for the next token: they only set
// the previous-token slot (see stmt.p1). Parentheses likewise only count
// depth and spot function calls. Everything else goes through tok.
func (s *scanner) run() {
	q := s.q
	n := len(q)
	my := s.mode == lexMySQL
	st := &s.st
	i := 0
	for i < n {
		c := q[i]
		switch byteClass[c] {
		case cSpace:
			i++
			for i < n && byteClass[q[i]] == cSpace {
				i++
			}
		case cWord:
			j := i + 1
			for j < n && wordCont[q[j]] {
				j++
			}
			if !my && j == i+1 && j < n && q[j] == '\'' && (c == 'e' || c == 'E') {
				// E'...': Postgres escape string.
				i = s.quoted(j, '\'', true)
				s.plain(kwString)
				continue
			}
			// The keyword lookup (kwIndex, keywordIn), inlined: it runs
			// for every word of every statement.
			k := kwIdent
			if j-i >= 2 && j-i <= maxKeywordLen {
				if e := kwIndex[kwHash(q[i:j])]; e != 0 {
					k = keywordIn(e, q[i:j])
				}
			}
			if k == kwIdent && st.flags&fastMask == fStarted {
				st.p1, st.ns, st.ne = kwIdent, i, j
			} else {
				s.tok(k, i, j)
			}
			i = j
		case cDigit:
			j := i + 1
			for j < n && (wordCont[q[j]] || q[j] == '.') {
				j++
			}
			if j == i+1 && c == '0' {
				s.plain(kwZero)
			} else {
				s.plain(kwNumber)
			}
			i = j
		case cDollar:
			if my {
				// $ starts an identifier in MySQL.
				j := i + 1
				for j < n && wordCont[q[j]] {
					j++
				}
				s.tok(kwIdent, i, j)
				i = j
				continue
			}
			i = s.dollar(i)
		case cQuote:
			j := simpleEnd(q, i, '\'')
			if j < 0 {
				j = s.quoted(i, '\'', my)
			}
			s.plain(kwString)
			i = j
		case cDQuote:
			j := simpleEnd(q, i, '"')
			if j < 0 {
				j = s.quoted(i, '"', my)
			}
			if my {
				s.plain(kwString)
			} else if st.flags&fastMask == fStarted {
				st.p1, st.ns, st.ne = kwQIdent, i+1, max(j-1, i+1)
			} else {
				s.tok(kwQIdent, i+1, max(j-1, i+1))
			}
			i = j
		case cBack:
			if my {
				j := simpleEnd(q, i, '`')
				if j < 0 {
					j = s.quoted(i, '`', false)
				}
				s.tok(kwQIdent, i+1, max(j-1, i+1))
				i = j
				continue
			}
			s.divergent = true
			s.plain(kwPunct)
			i++
		case cMinus:
			if i+1 < n && q[i+1] == '-' {
				// MySQL wants whitespace or a control character after --.
				mysqlComment := i+2 >= n || q[i+2] <= ' '
				if !my || mysqlComment {
					s.divergent = s.divergent || !mysqlComment
					i = lineEnd(q, i)
					continue
				}
			}
			s.plain(kwPunct)
			i++
		case cSlash:
			if i+1 < n && q[i+1] == '*' {
				i = s.blockComment(i)
				continue
			}
			s.plain(kwPunct)
			i++
		case cStar:
			if s.inExec && i+1 < n && q[i+1] == '/' {
				s.inExec = false
				i += 2
				continue
			}
			s.plain(kwPunct)
			i++
		case cHash:
			if my {
				i = lineEnd(q, i)
				continue
			}
			s.divergent = true
			s.plain(kwPunct)
			i++
		case cAt:
			i = s.at(i)
		case cLParen:
			switch {
			case st.flags&fastMask != fStarted:
				s.tok(kwLParen, 0, 0)
			case st.p1 == kwIdent || st.p1 == kwQIdent:
				st.flags |= funcFlags(q[st.ns:st.ne])
				fallthrough
			default:
				st.depth++
				st.p1 = kwLParen
			}
			i++
		case cRParen:
			if st.flags&fastMask == fStarted {
				st.depth--
				st.p1 = kwRParen
			} else {
				s.tok(kwRParen, 0, 0)
			}
			i++
		case cSemi:
			s.endStmt()
			i++
		default:
			if st.flags&fastMask == fStarted {
				st.p1 = kwPunct
			} else {
				s.tok(kwPunct, 0, 0)
			}
			i++
		}
	}
	if s.inExec {
		s.unterminated = true
	}
	s.endStmt()
}

// plain feeds a token that is neither a word nor a parenthesis.
func (s *scanner) plain(k kw) {
	if s.st.flags&fastMask == fStarted {
		s.st.p1 = k
		return
	}
	s.tok(k, 0, 0)
}

// result returns the verdict once run has finished.
func (s *scanner) result() Decision {
	switch {
	case s.hint == hintPrimary:
		return Decision{Primary, RuleHintPrimary, s.session}
	case s.unterminated:
		return Decision{Primary, RuleUnterminated, s.session}
	case s.hint == hintReplica:
		return Decision{Replica, RuleHintReplica, s.session}
	case s.nstmt == 0:
		return Decision{Primary, RuleEmpty, false}
	case s.nstmt == 1:
		return s.first
	case s.allRead:
		return Decision{Replica, s.first.Rule, false}
	}
	return Decision{Primary, RuleMultiStatement, s.session}
}
