package routing

import "testing"

// FuzzClassify seeds from the corpus and checks, for any input s:
//
//   - Classify never panics, returns valid values and is deterministic;
//   - the generic verdict is the merge of the Postgres and MySQL verdicts
//     (which checks the one-pass fast path);
//   - a corpus write w appended as s + "\n;\n" + w is still Primary when s
//     is complete (not unterminated, no replica hint) and w is a Primary,
//     non-hint, non-empty statement under that dialect (see
//     checkAppendedWrite for why each condition is needed);
//   - s and a corpus statement keep their verdict under a prefix of
//     whitespace or comments (the comment text built from s), and a
//     Primary one stays Primary with a trailing ";";
//   - a hint in front of s decides its target (checkHints);
//   - a plain read followed by a locking clause goes to the primary;
//   - the generic verdict is the merge also for s after a SELECT and s
//     wrapped in a read.
func FuzzClassify(f *testing.F) {
	cases := loadCorpus(f)
	var writes []string
	for _, c := range cases {
		if c.want.Target == Primary {
			writes = append(writes, c.query)
		}
	}
	for i, c := range cases {
		f.Add(c.query, uint16(i))
	}
	f.Fuzz(func(t *testing.T, s string, k uint16) {
		for _, d := range allDialects {
			got := Classify(s, d)
			if got.Target > Previous || got.Rule >= numRules {
				t.Fatalf("Classify(%q, %v) = %#v: invalid value", s, d, got)
			}
			if again := Classify(s, d); again != got {
				t.Fatalf("Classify(%q, %v) = %v, then %v", s, d, got, again)
			}
		}
		checkGenericIsMerge(t, s)
		checkAppendedWrite(t, s, writes[int(k)%len(writes)])
		checkWrapped(t, s, s)
		checkHints(t, s)
		checkLocking(t, s)
		checkGenericIsMerge(t, "SELECT "+s)
		checkGenericIsMerge(t, "/* c */ SELECT a, "+s+" FROM t")
		checkWrapped(t, cases[int(k)%len(cases)].query, s)
	})
}
