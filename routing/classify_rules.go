package routing

// Statement flags, set by tokens as they go by and read by decide.
const (
	fSession     uint32 = 1 << iota // changes, or uses, state the connection keeps for later statements
	fLocking                        // FOR UPDATE / SHARE, LOCK IN SHARE MODE
	fInto                           // INTO at the top level of a read
	fSessionFunc                    // nextval(, LAST_INSERT_ID(, ...
	fLockFunc                       // GET_LOCK(, pg_advisory_lock(, ...
	fWriteFunc                      // pg_notify(, pg_switch_wal(, ...
	fExecFunc                       // dblink(, query_to_xml(, ...: runs SQL text
	fDiag                           // SHOW WARNINGS, ROW_COUNT(, @@warning_count, ...
	fUserVar                        // MySQL @x
	fWritingCTE                     // INSERT/UPDATE/DELETE/MERGE right after ( or ) in a WITH
	fAnalyze                        // EXPLAIN ANALYZE
	fTempStmt                       // CREATE TEMP, DROP TEMPORARY, DROP PREPARE, FLUSH ... LOCK

	fReadKind      // the statement starts with SELECT, WITH, SHOW, VALUES or TABLE
	fSawWith       // a WITH token was seen
	fPendingInto   // the previous token was a top-level INTO
	fPendingAnlz   // the previous token was ANALYZE in an EXPLAIN prelude
	fPrelude       // in EXPLAIN options, before the explained statement
	fTempPrefix    // after CREATE or DROP, before the object type
	fPendingLead   // the previous token was the statement's SHOW or GET
	fStarted       // the statement's first token (after leading parentheses) was seen
	fPendingTokens = fPendingInto | fPendingAnlz | fTempPrefix | fPendingLead

	// fastMask selects the bits that let a plain token skip tok: the
	// statement has started and no rule waits for the next token.
	fastMask = fStarted | fPendingTokens
)

// stmt is the state of the statement being scanned.
type stmt struct {
	kind  kw  // first token after the leading parentheses
	lead  int // leading parentheses: "((SELECT" has 2
	depth int // current parenthesis depth, leading ones included
	// p1, p2 and p3 are the last three tokens, p1 the latest. A token that
	// is not a keyword only sets p1 (see run's fast path), so p2 and p3 may
	// then be stale; every rule that reads p2 (or p3) also wants p1 (and p2)
	// to be a keyword, which only tok writes, shifting the slots properly,
	// so a stale slot is never read.
	p1, p2, p3 kw
	ns, ne     int // q[ns:ne] is p1's name if it is a word
	flags      uint32
}

// tok feeds one significant token to the statement rules. start and end
// delimit the name of an identifier or quoted identifier (for function
// calls); they are 0 for other tokens.
func (s *scanner) tok(k kw, start, end int) {
	st := &s.st
	if st.flags&fStarted == 0 && k == kwLParen {
		st.lead++
		st.depth++
		return
	}
	s.started = true
	fl := st.flags
	if fl&fPendingTokens != 0 {
		fl = pending(fl, k, st.kind, s.q[start:end])
	}
	switch k {
	case kwLParen:
		if st.p1 == kwIdent || st.p1 == kwQIdent {
			fl |= funcFlags(s.q[st.ns:st.ne])
		}
		st.depth++
	case kwRParen:
		st.depth--
	case kwFor:
		// MariaDB sequences: NEXT VALUE FOR s, PREVIOUS VALUE FOR s.
		if st.p1 == kwValue && (st.p2 == kwNext || st.p2 == kwPrevious) {
			fl |= fSessionFunc // residue, like nextval
		}
	case kwUpdate:
		if st.p1 == kwFor || st.p1 == kwKey && st.p2 == kwNo && st.p3 == kwFor {
			fl |= fLocking
		} else if fl&fSawWith != 0 && (st.p1 == kwLParen || st.p1 == kwRParen) {
			fl |= fWritingCTE
		}
		fl &^= fPrelude
	case kwShare:
		if st.p1 == kwFor || st.p1 == kwKey && st.p2 == kwFor || st.p1 == kwIn && st.p2 == kwLock {
			fl |= fLocking
		}
	case kwInsert, kwDelete, kwMerge:
		if fl&fSawWith != 0 && (st.p1 == kwLParen || st.p1 == kwRParen) {
			fl |= fWritingCTE
		}
		fl &^= fPrelude
	case kwWith:
		fl |= fSawWith
		fl &^= fPrelude
	case kwInto:
		if fl&fReadKind != 0 && st.depth <= st.lead {
			fl |= fInto | fPendingInto
		}
	case kwSQLCalcFoundRows:
		fl |= fSessionFunc // residue: what FOUND_ROWS() reads next
	case kwAnalyze, kwAnalyse:
		if fl&fPrelude != 0 {
			fl |= fPendingAnlz
		}
	case kwLock:
		if st.kind == kwFlush {
			fl |= fTempStmt | fSession // FLUSH TABLES ... WITH READ LOCK
		}
	case kwSelect, kwValues, kwTable, kwCreate, kwDeclare, kwExecute, kwReplace:
		fl &^= fPrelude
	}
	if st.flags&fStarted == 0 {
		st.kind = k
		switch k {
		case kwSelect, kwWith, kwValues, kwTable:
			fl |= fReadKind
		case kwShow:
			fl |= fReadKind | fPendingLead
		case kwGet:
			fl |= fPendingLead
		case kwCreate, kwDrop:
			fl |= fTempPrefix
		case kwExplain:
			fl |= fPrelude
		case kwDescribe, kwDesc:
			if s.mode == lexMySQL {
				fl |= fPrelude
			}
		}
	}
	st.flags = fl | fStarted
	st.p3, st.p2, st.p1 = st.p2, st.p1, k
	st.ns, st.ne = start, end
}

// pending applies the rules that look at the token after INTO, ANALYZE,
// CREATE, DROP, SHOW or GET. word is the token's text when it is a word.
func pending(fl uint32, k, kind kw, word string) uint32 {
	if fl&fPendingLead != 0 {
		if k == kwIdent && diagLead(kind, word) {
			fl |= fDiag
		}
		fl &^= fPendingLead
	}
	if fl&fPendingInto != 0 {
		// SELECT ... INTO TEMP / TEMPORARY / LOCAL TEMP / GLOBAL TEMP t.
		if k == kwTemp || k == kwTemporary || k == kwLocal || k == kwGlobal {
			fl |= fSession
		}
		fl &^= fPendingInto
	}
	if fl&fPendingAnlz != 0 {
		// EXPLAIN (ANALYZE false / off / 0) does not run the statement.
		if k != kwFalse && k != kwOff && k != kwZero {
			fl |= fAnalyze
		}
		fl &^= fPendingAnlz
	}
	if fl&fTempPrefix != 0 {
		switch {
		case k == kwTemp || k == kwTemporary || k == kwPrepare && kind == kwDrop:
			fl |= fTempStmt | fSession
			fl &^= fTempPrefix
		case k == kwOr || k == kwReplace || k == kwGlobal || k == kwLocal:
			// CREATE OR REPLACE TEMP VIEW, CREATE GLOBAL TEMPORARY TABLE
		default:
			fl &^= fTempPrefix
		}
	}
	return fl
}

// diagLead reports whether word, after the statement's first keyword kind,
// makes a statement that reads the diagnostics of the connection's
// previous statement: MySQL's and MariaDB's SHOW WARNINGS, SHOW ERRORS,
// SHOW COUNT(*) WARNINGS / ERRORS, SHOW PROFILE(S) (the profiles of the
// session's recent statements) and GET [CURRENT | STACKED] DIAGNOSTICS.
func diagLead(kind kw, word string) bool {
	switch kind {
	case kwShow:
		switch len(word) {
		case 5:
			return eqLower(word, "count")
		case 6:
			return eqLower(word, "errors")
		case 7:
			return eqLower(word, "profile")
		case 8:
			return eqLower(word, "warnings") || eqLower(word, "profiles")
		}
	case kwGet:
		switch len(word) {
		case 7:
			return eqLower(word, "current") || eqLower(word, "stacked")
		case 11:
			return eqLower(word, "diagnostics")
		}
	}
	return false
}

// endStmt closes the statement being scanned and folds its verdict into the
// query's.
func (s *scanner) endStmt() {
	st := &s.st
	if st.flags&fStarted == 0 && st.lead == 0 {
		return // empty statement: ";;" or a trailing ";"
	}
	d := st.decide(s.mode)
	s.nstmt++
	if s.nstmt == 1 {
		s.first = d
	}
	if d.Target != Replica {
		s.allRead = false
	}
	s.session = s.session || d.Session
	*st = stmt{}
}

// decide returns the verdict on one statement.
func (st *stmt) decide(mode lexMode) Decision {
	fl := st.flags
	if fl&fPendingAnlz != 0 {
		fl |= fAnalyze // EXPLAIN ANALYZE at the very end
	}
	sess := fl&fSession != 0
	switch st.kind {
	case kwSelect, kwWith, kwShow, kwValues, kwTable:
		if fl&(readFlags|fDiag) == fDiag {
			return Decision{Previous, RuleDiagnostics, sess}
		}
		return Decision{readTarget(fl), readRule(fl), sess}
	case kwDescribe, kwDesc:
		if mode != lexMySQL {
			break // not a Postgres statement
		}
		fallthrough
	case kwExplain:
		if fl&fAnalyze != 0 {
			return Decision{Primary, RuleExplainAnalyze, sess}
		}
		// The explained statement does not run: its functions, locks,
		// INTO and variables do not matter.
		return Decision{Replica, RuleExplain, false}
	case kwGet:
		if fl&fDiag != 0 {
			return Decision{Previous, RuleDiagnostics, false}
		}
		return Decision{Primary, RuleSession, true}
	case kwSet, kwReset, kwUse, kwDiscard, kwLock, kwUnlock,
		kwPrepare, kwExecute, kwDeallocate, kwDeclare, kwFetch, kwMove, kwClose,
		kwListen, kwUnlisten, kwBegin, kwStart, kwCommit, kwEnd, kwRollback,
		kwAbort, kwSavepoint, kwRelease, kwXA, kwHandler:
		return Decision{Primary, RuleSession, true}
	}
	if fl&fTempStmt != 0 {
		return Decision{Primary, RuleSession, true}
	}
	return Decision{Primary, RuleWrite, sess}
}

// readFlags are the flags that send a read statement to the primary.
const readFlags = fWritingCTE | fLocking | fInto | fLockFunc | fWriteFunc | fExecFunc | fSessionFunc | fUserVar

func readTarget(fl uint32) Target {
	if fl&readFlags != 0 {
		return Primary
	}
	return Replica
}

// readRule names the first rule, in order of precedence, that sends a read
// statement to the primary.
func readRule(fl uint32) Rule {
	switch {
	case fl&readFlags == 0:
		return RuleRead
	case fl&fWritingCTE != 0:
		return RuleWritingCTE
	case fl&fLocking != 0:
		return RuleLockingRead
	case fl&fInto != 0:
		return RuleSelectInto
	case fl&fLockFunc != 0:
		return RuleLockFunc
	case fl&fWriteFunc != 0:
		return RuleWriteFunc
	case fl&fExecFunc != 0:
		return RuleExecFunc
	case fl&fSessionFunc != 0:
		return RuleSessionFunc
	}
	return RuleUserVar
}
