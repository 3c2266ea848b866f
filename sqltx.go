package rwpool

import "strings"

// A transaction can be sent as SQL on a *sql.Conn instead of with
// BeginTx: BEGIN … COMMIT, or MySQL's SET autocommit=0 … COMMIT. A
// session's write in it is covered only by the transaction's commit, so
// its position must be read after the COMMIT, not after the write
// (session.go). txControlOf recognises the statements that begin and end
// such a transaction. It reads a statement's first words only and
// allocates nothing: it runs for every statement on a pinned lease.

// txControl is what a statement does to the transaction open on its
// connection.
type txControl uint8

const (
	txNone          txControl = iota
	txBegin                   // BEGIN, START TRANSACTION
	txCommit                  // COMMIT, END
	txCommitChain             // COMMIT AND CHAIN: commits, and a new transaction begins
	txRollback                // ROLLBACK, ABORT (not ROLLBACK TO SAVEPOINT)
	txRollbackChain           // ROLLBACK AND CHAIN
	txAutocommitOff           // SET autocommit=0: every statement is in a transaction, until COMMIT
	txAutocommitOn            // SET autocommit=1: commits an open transaction (MySQL)
)

// txControlOf returns what query does to its connection's transaction.
func txControlOf(query string) txControl {
	x := txLex{q: query}
	switch w := x.word(); {
	case strings.EqualFold(w, "BEGIN"):
		// MariaDB's anonymous block is BEGIN NOT ATOMIC … END.
		if strings.EqualFold(x.word(), "NOT") {
			return txNone
		}
		return txBegin
	case strings.EqualFold(w, "START"):
		if strings.EqualFold(x.word(), "TRANSACTION") {
			return txBegin
		}
	case strings.EqualFold(w, "COMMIT"), strings.EqualFold(w, "END"):
		return x.ending(txCommit, txCommitChain)
	case strings.EqualFold(w, "ROLLBACK"), strings.EqualFold(w, "ABORT"):
		return x.ending(txRollback, txRollbackChain)
	case strings.EqualFold(w, "SET"):
		return x.autocommit()
	}
	return txNone
}

// ending reads what follows COMMIT or ROLLBACK: [WORK | TRANSACTION]
// [AND [NO] CHAIN]. COMMIT PREPARED and ROLLBACK PREPARED end a prepared
// transaction, not the connection's; ROLLBACK TO ends none.
func (x *txLex) ending(end, chain txControl) txControl {
	w := x.word()
	if strings.EqualFold(w, "WORK") || strings.EqualFold(w, "TRANSACTION") {
		w = x.word()
	}
	switch {
	case strings.EqualFold(w, "TO"), strings.EqualFold(w, "PREPARED"):
		return txNone
	case strings.EqualFold(w, "AND"):
		if strings.EqualFold(x.word(), "CHAIN") {
			return chain
		}
	}
	return end
}

// autocommit reads what follows SET: [SESSION | LOCAL] autocommit
// (or @@autocommit, @@session.autocommit) = 0 | 1 | OFF | ON | FALSE |
// TRUE. Only the first assignment is read.
func (x *txLex) autocommit() txControl {
	w := x.word()
	if strings.EqualFold(w, "SESSION") || strings.EqualFold(w, "LOCAL") {
		w = x.word()
	}
	w = strings.TrimPrefix(w, "@@")
	if i := strings.IndexByte(w, '.'); i >= 0 {
		if s := w[:i]; !strings.EqualFold(s, "session") && !strings.EqualFold(s, "local") {
			return txNone
		}
		w = w[i+1:]
	}
	if !strings.EqualFold(w, "autocommit") {
		return txNone
	}
	if w = x.word(); w == ":" {
		w = x.word()
	}
	if w != "=" {
		return txNone
	}
	switch v := x.word(); {
	case v == "0", strings.EqualFold(v, "OFF"), strings.EqualFold(v, "FALSE"):
		return txAutocommitOff
	case v == "1", strings.EqualFold(v, "ON"), strings.EqualFold(v, "TRUE"):
		return txAutocommitOn
	}
	return txNone
}

// txLex reads a statement's words, skipping white space and comments.
type txLex struct {
	q string
	i int
}

// word returns the next word (letters, digits, _, @, .), or the next
// other character alone; "" at the end.
func (x *txLex) word() string {
	x.skip()
	start := x.i
	for x.i < len(x.q) && isWordByte(x.q[x.i]) {
		x.i++
	}
	if x.i == start && x.i < len(x.q) {
		x.i++
	}
	return x.q[start:x.i]
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '@' || c == '.'
}

// skip skips white space, -- and # comments (to the end of the line) and
// /* */ comments (nested, as PostgreSQL's are).
func (x *txLex) skip() {
	for x.i < len(x.q) {
		switch c := x.q[x.i]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f':
			x.i++
		case c == '#' || c == '-' && strings.HasPrefix(x.q[x.i:], "--"):
			if j := strings.IndexByte(x.q[x.i:], '\n'); j >= 0 {
				x.i += j + 1
			} else {
				x.i = len(x.q)
			}
		case c == '/' && strings.HasPrefix(x.q[x.i:], "/*"):
			x.i += 2
			for depth := 1; depth > 0 && x.i < len(x.q); {
				switch {
				case strings.HasPrefix(x.q[x.i:], "/*"):
					depth++
					x.i += 2
				case strings.HasPrefix(x.q[x.i:], "*/"):
					depth--
					x.i += 2
				default:
					x.i++
				}
			}
		default:
			return
		}
	}
}
