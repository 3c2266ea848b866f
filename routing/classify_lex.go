package routing

import "strings"

// The lexers for the tokens run does not handle inline: comments, quoted
// tokens, dollar quotes and @.

// lineEnd returns the index after the line comment starting at i.
func lineEnd(q string, i int) int {
	if k := strings.IndexByte(q[i:], '\n'); k >= 0 {
		return i + k + 1
	}
	return len(q)
}

// simpleEnd returns the index after the quoted token starting at q[i] when
// it is short and simple, with no backslash and no doubled quote; -1
// otherwise, and quoted must lex it. It is the inlined fast path for
// identifiers and short literals.
func simpleEnd(q string, i int, quote byte) int {
	for j := i + 1; j < len(q) && j-i < 40; j++ {
		if c := q[j]; c == quote {
			if j+1 < len(q) && q[j+1] == quote {
				return -1
			}
			return j + 1
		} else if c == '\\' {
			return -1
		}
	}
	return -1
}

// quoted returns the index after the quoted token whose opening quote is at
// q[i]. A doubled quote stands for itself; with backslash, a backslash
// escapes the next byte. An unterminated token marks the query and returns
// len(q).
func (s *scanner) quoted(i int, quote byte, backslash bool) int {
	q := s.q
	n := len(q)
	j := i + 1
	// Most quoted tokens are short: a plain loop beats IndexByte's call
	// overhead there.
	for j < n {
		c := q[j]
		switch {
		case c == quote:
			if j+1 < n && q[j+1] == quote {
				j += 2
				continue
			}
			return j + 1
		case c == '\\':
			if backslash {
				j += 2 // the backslash and the byte it escapes
				continue
			}
			s.divergent = true // MySQL would read an escape
		case j-i > 32:
			return s.quotedLong(j, quote, backslash)
		}
		j++
	}
	s.unterminated = true
	return n
}

// quotedLong is quoted for the rest of a long token, from q[j], with
// IndexByte.
func (s *scanner) quotedLong(j int, quote byte, backslash bool) int {
	q := s.q
	for {
		k := strings.IndexByte(q[j:], quote)
		if k < 0 {
			s.unterminated = true
			return len(q)
		}
		k += j
		if b := strings.IndexByte(q[j:k], '\\'); b >= 0 {
			if backslash {
				j += b + 2
				if j > len(q) {
					s.unterminated = true
					return len(q)
				}
				continue
			}
			s.divergent = true
		}
		if k+1 < len(q) && q[k+1] == quote {
			j = k + 2
			continue
		}
		return k + 1
	}
}

// dollar lexes a Postgres token starting with $ at q[i]: a $1 placeholder, a
// $tag$...$tag$ quote or a lone $. It returns the index after it.
func (s *scanner) dollar(i int) int {
	q := s.q
	n := len(q)
	j := i + 1
	if j < n && byteClass[q[j]] == cDigit {
		for j < n && byteClass[q[j]] == cDigit {
			j++
		}
		s.plain(kwParam)
		return j
	}
	for j < n && q[j] != '$' && wordCont[q[j]] {
		j++
	}
	s.divergent = true // MySQL has no dollar quotes; $ starts a word there
	if j < n && q[j] == '$' {
		delim := q[i : j+1]
		k := strings.Index(q[j+1:], delim)
		if k < 0 {
			s.unterminated = true
			return n
		}
		s.tok(kwString, 0, 0)
		return j + 1 + k + len(delim)
	}
	s.tok(kwPunct, 0, 0)
	return i + 1
}

// at lexes a token starting with @ at q[i] and returns the index after it.
// In Postgres @ is an operator (absolute value, @>, <@). In MySQL @@ starts a
// system variable and @ followed by a word byte or a quote a user variable,
// unless it directly follows a word or a quote, as in 'user'@'host'.
func (s *scanner) at(i int) int {
	q := s.q
	n := len(q)
	if s.mode != lexMySQL {
		s.divergent = true
		s.tok(kwPunct, 0, 0)
		return i + 1
	}
	if i+1 >= n {
		s.tok(kwPunct, 0, 0)
		return i + 1
	}
	c := q[i+1]
	if c == '@' {
		// @@name, @@session.name, @@global.name: a system variable.
		j := i + 2
		for j < n && (wordCont[q[j]] || q[j] == '.') {
			j++
		}
		s.st.flags |= sysVarFlags(q[i+2 : j])
		s.tok(kwPunct, 0, 0)
		return j
	}
	isQuote := c == '\'' || c == '"' || c == '`'
	if !wordCont[c] && !isQuote {
		s.tok(kwPunct, 0, 0)
		return i + 1
	}
	if i > 0 {
		if p := q[i-1]; wordCont[p] || p == '\'' || p == '"' || p == '`' {
			s.tok(kwPunct, 0, 0) // user@host
			return i + 1
		}
	}
	j := i + 2
	if isQuote {
		j = s.quoted(i+1, c, c != '`')
	} else {
		for j < n && (wordCont[q[j]] || q[j] == '.') {
			j++
		}
	}
	s.st.flags |= fUserVar | fSession
	s.tok(kwUserVar, 0, 0)
	return j
}

// sysVarFlags returns the statement flags reading the MySQL system variable
// name (with its scope, as in session.warning_count) sets: the previous
// statement's warning and error counts are its diagnostics; identity and
// last_insert_id are LAST_INSERT_ID().
func sysVarFlags(name string) uint32 {
	for k := len(name) - 1; k >= 0; k-- {
		if name[k] == '.' {
			name = name[k+1:]
			break
		}
	}
	switch len(name) {
	case 8:
		if eqLower(name, "identity") {
			return fnResidue
		}
	case 11:
		if eqLower(name, "error_count") {
			return fnDiag
		}
	case 13:
		if eqLower(name, "warning_count") {
			return fnDiag
		}
	case 14:
		if eqLower(name, "last_insert_id") {
			return fnResidue
		}
	}
	return 0
}

// blockComment lexes a comment starting with /* at q[i] and returns the
// index after it. Postgres comments nest; MySQL ones do not, and MySQL runs
// the body of /*! ... */ and /*M! ... */ as code. A hint is recorded when no
// token came before.
func (s *scanner) blockComment(i int) int {
	q := s.q
	n := len(q)
	body := i + 2
	if s.mode == lexMySQL {
		if body < n && q[body] == '!' || body+1 < n && q[body] == 'M' && q[body+1] == '!' {
			// Executable comment: skip the marker and the version number,
			// lex the rest as code until */.
			j := body + 1
			if q[body] == 'M' {
				j++
			}
			for j < n && byteClass[q[j]] == cDigit {
				j++
			}
			s.inExec = true
			return j
		}
		k := strings.Index(q[body:], "*/")
		if k < 0 {
			s.unterminated = true
			return n
		}
		s.noteHint(q[body : body+k])
		return body + k + 2
	}
	if body < n && q[body] == '!' || body+1 < n && q[body] == 'M' && q[body+1] == '!' {
		s.divergent = true // maybe a MySQL executable comment
	}
	depth := 1
	j := body
	open := body // a / at or after open can start a nested comment
	for {
		k := strings.IndexByte(q[j:], '*')
		if k < 0 {
			s.unterminated = true
			return n
		}
		k += j
		switch {
		case k-1 >= open && q[k-1] == '/':
			depth++
			s.divergent = true // MySQL comments do not nest
			open = k + 1
		case k+1 < n && q[k+1] == '/':
			depth--
			if depth == 0 {
				s.noteHint(q[body:k])
				return k + 2
			}
			open = k + 2
		}
		j = k + 1
	}
}

// noteHint records a /*rwpool:primary*/ or /*rwpool:replica*/ hint whose
// body is c, if no token has been seen yet. Whitespace may surround the
// words and the colon; case is ignored. Primary wins over replica.
func (s *scanner) noteHint(c string) {
	if s.started {
		return
	}
	c = strings.TrimSpace(c)
	if len(c) < len("rwpool:primary") || !eqLower(c, "rwpool") {
		return
	}
	c = strings.TrimLeft(c[len("rwpool"):], " \t\n\v\f\r")
	if len(c) == 0 || c[0] != ':' {
		return
	}
	c = strings.TrimLeft(c[1:], " \t\n\v\f\r")
	switch {
	case len(c) == len("primary") && eqLower(c, "primary"):
		s.hint = hintPrimary
	case len(c) == len("replica") && eqLower(c, "replica"):
		if s.hint == hintNone {
			s.hint = hintReplica
		}
	}
}
