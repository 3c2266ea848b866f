package routing

import (
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var allDialects = []Dialect{DialectGeneric, DialectPostgres, DialectMySQL}

func TestClassifyExamples(t *testing.T) {
	// The verdicts the package documentation promises; the corpus under
	// testdata/classify has many more.
	tests := []struct {
		q    string
		d    Dialect
		want Decision
	}{
		{"SELECT 1", DialectPostgres, Decision{Replica, RuleRead, false}},
		{"/* app */ (SELECT 1)", DialectMySQL, Decision{Replica, RuleRead, false}},
		{"INSERT INTO t VALUES (1)", DialectGeneric, Decision{Primary, RuleWrite, false}},
		{"SELECT * FROM t FOR UPDATE", DialectGeneric, Decision{Primary, RuleLockingRead, false}},
		{"SELECT nextval('s')", DialectPostgres, Decision{Primary, RuleSessionFunc, false}},
		{"SELECT @x", DialectMySQL, Decision{Primary, RuleUserVar, true}},
		{"SELECT @x", DialectPostgres, Decision{Replica, RuleRead, false}},
		{"SET search_path = app", DialectPostgres, Decision{Primary, RuleSession, true}},
		{"/*rwpool:replica*/ SELECT 1 FOR UPDATE", DialectPostgres, Decision{Replica, RuleHintReplica, false}},
		{"SELECT 'x", DialectMySQL, Decision{Primary, RuleUnterminated, false}},
		{"", DialectGeneric, Decision{Primary, RuleEmpty, false}},
		{"SELECT 1; SELECT 2", DialectGeneric, Decision{Replica, RuleRead, false}},
		{"SELECT 1; DELETE FROM t", DialectGeneric, Decision{Primary, RuleMultiStatement, false}},
		{"EXPLAIN DELETE FROM t", DialectPostgres, Decision{Replica, RuleExplain, false}},
		{"EXPLAIN ANALYZE SELECT 1", DialectPostgres, Decision{Primary, RuleExplainAnalyze, false}},
		{"SELECT pg_switch_wal()", DialectPostgres, Decision{Primary, RuleWriteFunc, false}},
		{"SELECT query_to_xml('SELECT 1', true, false, '')", DialectPostgres, Decision{Primary, RuleExecFunc, false}},
		{"SHOW WARNINGS", DialectMySQL, Decision{Previous, RuleDiagnostics, false}},
		{"SELECT @@warning_count", DialectGeneric, Decision{Previous, RuleDiagnostics, false}},
	}
	for _, tt := range tests {
		if got := Classify(tt.q, tt.d); got != tt.want {
			t.Errorf("Classify(%q, %v) = %v, want %v", tt.q, tt.d, got, tt.want)
		}
	}
}

func TestZeroDecisionIsConservative(t *testing.T) {
	var d Decision
	if d.Target != Primary || d.Rule != RuleWrite || d.Session {
		t.Errorf("zero Decision = %v", d)
	}
}

func TestDialectOf(t *testing.T) {
	want := map[string]Dialect{
		"postgres":         DialectPostgres,
		"postgresql":       DialectPostgres,
		"pgx":              DialectPostgres,
		"pgx/v5":           DialectPostgres,
		"pgx/v4":           DialectPostgres,
		"cloudsqlpostgres": DialectPostgres,
		"nrpostgres":       DialectPostgres,
		"pq":               DialectPostgres,
		"Postgres":         DialectPostgres,
		"cockroach":        DialectPostgres,
		"mysql":            DialectMySQL,
		"nrmysql":          DialectMySQL,
		"cloudsqlmysql":    DialectMySQL,
		"mariadb":          DialectMySQL,
		"MySQL":            DialectMySQL,
		"sqlite3":          DialectGeneric,
		"sqlserver":        DialectGeneric,
		"sqlmock":          DialectGeneric,
		"pqx":              DialectGeneric,
		"":                 DialectGeneric,
	}
	got := map[string]Dialect{}
	for name := range want {
		got[name] = DialectOf(name)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("DialectOf (-want +got):\n%s", diff)
	}
}

func TestStrings(t *testing.T) {
	got := []string{
		DialectGeneric.String(), DialectPostgres.String(), DialectMySQL.String(), Dialect(9).String(),
		Primary.String(), Replica.String(), Previous.String(), Target(7).String(),
		Rule(200).String(),
		Decision{Replica, RuleRead, false}.String(),
		Decision{Primary, RuleUserVar, true}.String(),
	}
	want := []string{
		"generic", "postgres", "mysql", "Dialect(9)",
		"primary", "replica", "previous", "Target(7)",
		"Rule(200)",
		"replica (read: SELECT/WITH/SHOW/VALUES/TABLE)",
		"primary (session: user variable @x) +session",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("String (-want +got):\n%s", diff)
	}
	seen := map[string]Rule{}
	for r := Rule(0); r < numRules; r++ {
		s := r.String()
		if !strings.Contains(s, ": ") || strings.HasPrefix(s, "Rule(") {
			t.Errorf("Rule(%d).String() = %q, want \"kind: words\"", r, s)
		}
		if o, dup := seen[s]; dup {
			t.Errorf("rules %d and %d share the name %q", o, r, s)
		}
		seen[s] = r
	}
}

// TestClassifyDoesNotAllocate checks the zero-allocation promise on every
// corpus case and dialect.
func TestClassifyDoesNotAllocate(t *testing.T) {
	cases := loadCorpus(t)
	for _, d := range allDialects {
		n := testing.AllocsPerRun(5, func() {
			for _, c := range cases {
				Classify(c.query, d)
			}
		})
		if n != 0 {
			t.Errorf("%v: %v allocations per corpus run, want 0", d, n)
		}
	}
}

// TestGenericIsMerge checks that the generic fast path (one pass when
// nothing diverges) gives the same verdict as always running both passes.
func TestGenericIsMerge(t *testing.T) {
	for _, c := range loadCorpus(t) {
		checkGenericIsMerge(t, c.query)
	}
}

func checkGenericIsMerge(t *testing.T, q string) {
	t.Helper()
	pg, my := Classify(q, DialectPostgres), Classify(q, DialectMySQL)
	if got, want := Classify(q, DialectGeneric), mergeGeneric(pg, my); got != want {
		t.Fatalf("Classify(%q, generic) = %v, want merge of postgres %v and mysql %v = %v", q, got, pg, my, want)
	}
}

func TestClassifyConcurrent(t *testing.T) {
	cases := loadCorpus(t)
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, c := range cases {
				if got := Classify(c.query, c.dialect); got != c.want {
					t.Errorf("%s: concurrent Classify = %v, want %v", c.pos, got, c.want)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// primaryWrite reports whether w, classified under d, is a write that keeps
// its verdict inside a multi-statement string: Primary, and neither a hint
// (which only counts before the first token of the whole string) nor empty.
func primaryWrite(w string, d Dialect) bool {
	r := Classify(w, d)
	return r.Target == Primary && r.Rule != RuleHintPrimary && r.Rule != RuleHintReplica && r.Rule != RuleEmpty
}

// completeStatement reports whether s, classified under d, ends at the top
// level with no replica hint, so that whatever follows "\n;\n" is lexed from
// scratch and cannot be overridden by s.
func completeStatement(s string, d Dialect) bool {
	r := Classify(s, d).Rule
	return r != RuleUnterminated && r != RuleHintReplica
}

// checkAppendedWrite checks the property: when s is complete and w a
// primary write under some single-dialect pass, s + "\n;\n" + w is Primary
// under that dialect and under DialectGeneric.
func checkAppendedWrite(t *testing.T, s, w string) {
	t.Helper()
	q := s + "\n;\n" + w
	generic := false
	for _, d := range []Dialect{DialectPostgres, DialectMySQL} {
		if !primaryWrite(w, d) || !completeStatement(s, d) {
			continue
		}
		generic = true
		if got := Classify(q, d); got.Target != Primary {
			t.Fatalf("Classify(%q, %v) = %v: a complete statement followed by a write must go to the primary", q, d, got)
		}
	}
	if got := Classify(q, DialectGeneric); generic && got.Target != Primary {
		t.Fatalf("Classify(%q, generic) = %v: a complete statement followed by a write must go to the primary", q, got)
	}
}

func TestAppendedWriteIsPrimary(t *testing.T) {
	cases := loadCorpus(t)
	var writes []string
	for _, c := range cases {
		if c.want.Target == Primary {
			writes = append(writes, c.query)
		}
	}
	for _, s := range cases {
		for _, w := range writes {
			checkAppendedWrite(t, s.query, w)
		}
	}
}

// commentText turns arbitrary bytes into the text of a comment that can not
// end the comment, nest, be executable, or be a hint.
func commentText(s string) string {
	var b strings.Builder
	b.WriteString("c ")
	for i := 0; i < len(s) && i < 64; i++ {
		switch c := s[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == ' ', c == ',', c == '.':
			b.WriteByte(c)
		}
	}
	return b.String()
}

// checkWrapped checks that prefixing q with whitespace or comments leaves
// its verdict unchanged in every dialect, and that a trailing ";" keeps a
// Primary verdict Primary.
func checkWrapped(t *testing.T, q, noise string) {
	t.Helper()
	c := commentText(noise)
	for _, d := range allDialects {
		want := Classify(q, d)
		prefixes := []string{" \t\n", "/* " + c + " */ ", "/*" + c + "*/\n", "-- " + c + "\n", "--\n"}
		if d == DialectMySQL {
			prefixes = append(prefixes, "# "+c+"\n")
		}
		for _, p := range prefixes {
			if got := Classify(p+q, d); got != want {
				t.Fatalf("Classify(%q, %v) = %v, but %v without the prefix %q", p+q, d, got, want, p)
			}
		}
		if want.Target != Primary {
			continue
		}
		for _, sfx := range []string{";", ";  ", " ;\n", ";\n\n"} {
			if got := Classify(q+sfx, d); got.Target != Primary {
				t.Fatalf("Classify(%q, %v) = %v, but %v without the suffix %q", q+sfx, d, got, want, sfx)
			}
		}
	}
}

func TestWrappedKeepsVerdict(t *testing.T) {
	for _, c := range loadCorpus(t) {
		checkWrapped(t, c.query, "some words */ rwpool:replica")
	}
}

// checkHints checks that a hint comment in front of s decides the verdict:
// /*rwpool:primary*/ always, /*rwpool:replica*/ unless s itself starts with
// a primary hint or is unterminated. Session still describes s.
func checkHints(t *testing.T, s string) {
	t.Helper()
	for _, d := range []Dialect{DialectPostgres, DialectMySQL} {
		plain := Classify(s, d)
		want := Decision{Primary, RuleHintPrimary, plain.Session}
		if got := Classify("/*rwpool:primary*/ "+s, d); got != want {
			t.Fatalf("Classify(%q, %v) = %v, want %v", "/*rwpool:primary*/ "+s, d, got, want)
		}
		want = Decision{Replica, RuleHintReplica, plain.Session}
		if plain.Rule == RuleHintPrimary || plain.Rule == RuleUnterminated {
			want = plain
		}
		if got := Classify("/* rwpool : replica */\n"+s, d); got != want {
			t.Fatalf("Classify(%q, %v) = %v, want %v", "/* rwpool : replica */\n"+s, d, got, want)
		}
	}
}

// checkLocking checks that a locking clause on a new line makes a plain
// read go to the primary. Only for s without ";": the clause would land in
// the last statement of several, which may be an EXPLAIN (all reads report
// the first statement's rule).
func checkLocking(t *testing.T, s string) {
	t.Helper()
	if strings.Contains(s, ";") {
		return
	}
	for _, d := range allDialects {
		if Classify(s, d) != (Decision{Replica, RuleRead, false}) {
			continue
		}
		for _, l := range []string{"\nFOR UPDATE", "\n for share", "\nLOCK IN SHARE MODE"} {
			if got := Classify(s+l, d); got.Target != Primary {
				t.Fatalf("Classify(%q, %v) = %v, want primary", s+l, d, got)
			}
		}
	}
}

func TestHintsAndLocking(t *testing.T) {
	for _, c := range loadCorpus(t) {
		checkHints(t, c.query)
		checkLocking(t, c.query)
	}
}

func TestKeywords(t *testing.T) {
	for _, e := range keywords {
		for _, s := range []string{e.s, strings.ToUpper(e.s), strings.ToUpper(e.s[:1]) + e.s[1:]} {
			if got := lookupKeyword(s); got != e.k {
				t.Errorf("lookupKeyword(%q) = %d, want %d", s, got, e.k)
			}
		}
		// A word differing in one byte, or longer, is no keyword.
		for _, s := range []string{e.s + "s", "x" + e.s, e.s[:len(e.s)-1] + "#"} {
			if got := lookupKeyword(s); got != kwIdent && keywordByName(s) != got {
				t.Errorf("lookupKeyword(%q) = %d, want kwIdent", s, got)
			}
		}
	}
	for _, s := range []string{"", "a", "users", "id", "nextval", "SELECTS", "sql_calc_found_rowx", "ïn"} {
		if got := lookupKeyword(s); got != kwIdent {
			t.Errorf("lookupKeyword(%q) = %d, want kwIdent", s, got)
		}
	}
}

// keywordByName returns the kw named s by the keyword list, or kwIdent.
func keywordByName(s string) kw {
	for _, e := range keywords {
		if strings.EqualFold(e.s, s) {
			return e.k
		}
	}
	return kwIdent
}

func TestDecisionPins(t *testing.T) {
	for _, c := range []struct {
		q    string
		pins bool
	}{
		{"SELECT 1", false},
		{"INSERT INTO t VALUES (1)", true},
		{"SET search_path = x", true},
		{"SELECT * FROM t FOR UPDATE", true},
		{"/*rwpool:primary*/ SELECT 1", true},
		{"/*rwpool:replica*/ SELECT 1", false},
		{"/*rwpool:replica*/ SELECT currval('s')", false}, // the hint wins: currval is no session state
		{"/*rwpool:replica*/ SELECT set_config('a.b', 'c', false)", true},
		{"SHOW WARNINGS", false}, // runs where the previous statement ran, pinned or not
		{"SELECT ROW_COUNT()", false},
	} {
		if got := Classify(c.q, DialectPostgres).Pins(); got != c.pins {
			t.Errorf("Classify(%q).Pins() = %v, want %v", c.q, got, c.pins)
		}
	}
}

// TestFuncFlags checks every function the rules know, in the forms a call
// takes: any case, quoted, schema-qualified, with space before "(".
func TestFuncFlags(t *testing.T) {
	ruleOf := map[uint32]Rule{
		fnSession: RuleSessionFunc, fnResidue: RuleSessionFunc, fnWrite: RuleWriteFunc, fnWrite | fSession: RuleWriteFunc,
		fnExec: RuleExecFunc, fnExec | fSession: RuleExecFunc, fnDiag: RuleDiagnostics,
		fnLock: RuleLockFunc, fLockFunc: RuleLockFunc,
	}
	for name, fl := range funcs {
		r, ok := ruleOf[fl]
		if !ok {
			t.Errorf("%s: unexpected flags %#x", name, fl)
			continue
		}
		want := Decision{Primary, r, fl&fSession != 0}
		if r == RuleDiagnostics {
			want.Target = Previous
		}
		for _, q := range []string{
			"SELECT " + name + "()",
			"SELECT " + strings.ToUpper(name) + " (1)",
			"SELECT a FROM pg_catalog." + name + "(1, 'x')",
			`SELECT "` + name + `"(1)`,
			"SELECT 1 FROM t WHERE x = " + name + " /* c */ (2)",
		} {
			if got := Classify(q, DialectPostgres); got != want {
				t.Errorf("Classify(%q) = %v, want %v", q, got, want)
			}
		}
		// Not calls: a column, a string, a longer name.
		for _, q := range []string{"SELECT " + name + " FROM t", "SELECT '" + name + "()'", "SELECT " + name + "x()"} {
			if got := Classify(q, DialectPostgres); got != (Decision{Replica, RuleRead, false}) {
				t.Errorf("Classify(%q) = %v, want a plain read", q, got)
			}
		}
		if len(name) < minFuncLen || len(name) > maxFuncLen || strings.ToLower(name) != name {
			t.Errorf("%q: not a lower-case name of %d to %d bytes", name, minFuncLen, maxFuncLen)
		}
	}
}

// TestPrefixFuncs checks the families funcFlags matches by prefix.
func TestPrefixFuncs(t *testing.T) {
	for q, want := range map[string]Decision{
		"SELECT pg_advisory_lock(1)":               {Primary, RuleLockFunc, true},
		"SELECT pg_advisory_unlock_all()":          {Primary, RuleLockFunc, true},
		"SELECT pg_try_advisory_lock_shared(1)":    {Primary, RuleLockFunc, true},
		"SELECT pg_advisory_xact_lock(1)":          {Primary, RuleLockFunc, false},
		"SELECT pg_try_advisory_xact_lock(1, 2)":   {Primary, RuleLockFunc, false},
		"SELECT * FROM crosstab('SELECT 1')":       {Primary, RuleExecFunc, false},
		"SELECT * FROM CROSSTAB4('SELECT 1')":      {Primary, RuleExecFunc, false},
		"SELECT * FROM crosstab_int_3('SELECT 1')": {Primary, RuleExecFunc, false},
		"SELECT crosstab FROM t":                   {Replica, RuleRead, false},
	} {
		if got := Classify(q, DialectPostgres); got != want {
			t.Errorf("Classify(%q) = %v, want %v", q, got, want)
		}
	}
}

// TestDiagnostics checks the statements that read the previous
// statement's diagnostics, and their look-alikes.
func TestDiagnostics(t *testing.T) {
	prev := Decision{Previous, RuleDiagnostics, false}
	for q, want := range map[string]Decision{
		"SHOW WARNINGS":               prev,
		"SHOW ERRORS LIMIT 2":         prev,
		"SHOW COUNT(*) WARNINGS":      prev,
		"SHOW PROFILES":               prev,
		"GET DIAGNOSTICS @n = NUMBER": prev,
		"GET STACKED DIAGNOSTICS CONDITION 1 @e = MYSQL_ERRNO": prev,
		"SELECT @@session.error_count":                         prev,
		"SELECT FOUND_ROWS()":                                  prev,
		"SHOW STATUS":                                          {Replica, RuleRead, false},
		"SHOW `warnings`":                                      {Replica, RuleRead, false},
		"SELECT @@warning_count FOR UPDATE":                    {Primary, RuleLockingRead, false},
		"SELECT @@global.warning_count.x":                      {Replica, RuleRead, false},
		"SELECT @@last_insert_id":                              {Primary, RuleSessionFunc, false},
		"GET LOCK":                                             {Primary, RuleSession, true},
		"SELECT 1; GET DIAGNOSTICS @n = NUMBER":                {Primary, RuleMultiStatement, false},
		"SHOW WARNINGS; SHOW ERRORS":                           {Primary, RuleMultiStatement, false},
	} {
		if got := Classify(q, DialectMySQL); got != want {
			t.Errorf("Classify(%q, mysql) = %v, want %v", q, got, want)
		}
	}
	// PostgreSQL has no such statements, but a SHOW WARNINGS there reads
	// a setting named warnings, which no server has: the same verdict is
	// harmless, and keeps DialectGeneric's passes in agreement.
	if got := Classify("SHOW WARNINGS", DialectPostgres); got != prev {
		t.Errorf("Classify(SHOW WARNINGS, postgres) = %v", got)
	}
	// @ is an operator in PostgreSQL.
	if got := Classify("SELECT @@warning_count", DialectPostgres); got != (Decision{Replica, RuleRead, false}) {
		t.Errorf("Classify(SELECT @@warning_count, postgres) = %v", got)
	}
}

func TestMergeGenericPrevious(t *testing.T) {
	read := Decision{Replica, RuleRead, false}
	prev := Decision{Previous, RuleDiagnostics, true}
	write := Decision{Primary, RuleWrite, false}
	empty := Decision{Primary, RuleEmpty, false}
	for _, c := range []struct{ pg, my, want Decision }{
		{read, prev, prev},
		{prev, read, prev},
		{prev, write, Decision{Primary, RuleWrite, true}},
		{write, prev, Decision{Primary, RuleWrite, true}},
		{empty, prev, prev},
	} {
		if got := mergeGeneric(c.pg, c.my); got != c.want {
			t.Errorf("mergeGeneric(%v, %v) = %v, want %v", c.pg, c.my, got, c.want)
		}
	}
}

// lookupKeyword is the scanner's keyword lookup (inlined there, in
// scan): the kw of the unquoted word s, kwIdent when it is not one the
// rules look at.
func lookupKeyword(s string) kw {
	if len(s) < 2 || len(s) > maxKeywordLen {
		return kwIdent
	}
	return keywordIn(kwIndex[kwHash(s)], s)
}
