package rwpool

import "testing"

func TestTxControlOf(t *testing.T) {
	for _, tc := range []struct {
		q    string
		want txControl
	}{
		{"BEGIN", txBegin},
		{"  begin work;", txBegin},
		{"BEGIN TRANSACTION ISOLATION LEVEL SERIALIZABLE", txBegin},
		{"/* a /* nested */ comment */ BEGIN", txBegin},
		{"-- c\nSTART TRANSACTION READ ONLY", txBegin},
		{"# c\nstart transaction", txBegin},
		{"BEGIN NOT ATOMIC SELECT 1; END", txNone},
		{"START SLAVE", txNone},
		{"COMMIT", txCommit},
		{"commit work", txCommit},
		{"END", txCommit},
		{"END TRANSACTION", txCommit},
		{"COMMIT AND CHAIN", txCommitChain},
		{"COMMIT AND NO CHAIN", txCommit},
		{"COMMIT PREPARED 'x'", txNone},
		{"ROLLBACK", txRollback},
		{"ABORT", txRollback},
		{"ROLLBACK WORK AND CHAIN", txRollbackChain},
		{"ROLLBACK TO SAVEPOINT s", txNone},
		{"ROLLBACK TO s", txNone},
		{"ROLLBACK PREPARED 'x'", txNone},
		{"SET autocommit=0", txAutocommitOff},
		{"set AUTOCOMMIT = OFF", txAutocommitOff},
		{"SET SESSION autocommit = 0", txAutocommitOff},
		{"SET @@autocommit=false", txAutocommitOff},
		{"SET @@session.autocommit := 0", txAutocommitOff},
		{"SET autocommit=1", txAutocommitOn},
		{"SET @@SESSION.autocommit=ON", txAutocommitOn},
		{"SET @@global.autocommit=0", txNone},
		{"SET autocommit_x=0", txNone},
		{"SET search_path = x", txNone},
		{"INSERT INTO t VALUES (1)", txNone},
		{"SELECT 'BEGIN'", txNone},
		{"", txNone},
		{"/* unterminated", txNone},
	} {
		if got := txControlOf(tc.q); got != tc.want {
			t.Errorf("txControlOf(%q) = %d, want %d", tc.q, got, tc.want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { txControlOf("/* c */ SET @@session.autocommit = 0") }); n != 0 {
		t.Errorf("txControlOf allocates %v times", n)
	}
}
