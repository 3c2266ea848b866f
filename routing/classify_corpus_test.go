package routing

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// corpusDir holds the statement corpus; see its README.md for the format.
const corpusDir = "testdata/classify"

// minCorpus is the least number of cases the corpus must hold.
const minCorpus = 250

// ruleKeys are the names of the rules in corpus expectations.
var ruleKeys = map[string]Rule{
	"write":           RuleWrite,
	"read":            RuleRead,
	"explain":         RuleExplain,
	"hint-primary":    RuleHintPrimary,
	"hint-replica":    RuleHintReplica,
	"empty":           RuleEmpty,
	"unterminated":    RuleUnterminated,
	"multi":           RuleMultiStatement,
	"session":         RuleSession,
	"writing-cte":     RuleWritingCTE,
	"explain-analyze": RuleExplainAnalyze,
	"locking":         RuleLockingRead,
	"select-into":     RuleSelectInto,
	"session-func":    RuleSessionFunc,
	"lock-func":       RuleLockFunc,
	"write-func":      RuleWriteFunc,
	"user-var":        RuleUserVar,
	"exec-func":       RuleExecFunc,
	"diagnostics":     RuleDiagnostics,
}

// corpusCase is one statement of the corpus with its expected verdict.
type corpusCase struct {
	pos     string // file:line of the expect line
	dialect Dialect
	query   string
	want    Decision
}

func (c corpusCase) String() string {
	return fmt.Sprintf("%s (%v) %q", c.pos, c.dialect, c.query)
}

// corpusDialect returns the dialect a corpus file is written for, from its
// name: postgres*.sql, mysql*.sql or generic*.sql.
func corpusDialect(name string) (Dialect, bool) {
	for _, d := range []Dialect{DialectPostgres, DialectMySQL, DialectGeneric} {
		if strings.HasPrefix(name, d.String()) {
			return d, true
		}
	}
	return 0, false
}

// loadCorpus reads every case of the corpus.
func loadCorpus(tb testing.TB) []corpusCase {
	tb.Helper()
	files, err := filepath.Glob(filepath.Join(corpusDir, "*.sql"))
	if err != nil {
		tb.Fatal(err)
	}
	if len(files) == 0 {
		tb.Fatalf("no corpus files in %s", corpusDir)
	}
	var all []corpusCase
	for _, f := range files {
		cs, err := parseCorpusFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		all = append(all, cs...)
	}
	return all
}

const expectPrefix = "-- expect:"

// parseCorpusFile parses one corpus file.
func parseCorpusFile(path string) ([]corpusCase, error) {
	d, ok := corpusDialect(filepath.Base(path))
	if !ok {
		return nil, fmt.Errorf("%s: name must start with generic, postgres or mysql", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var (
		cases   []corpusCase
		cur     *corpusCase
		escaped bool
		lines   []string
	)
	flush := func() error {
		if cur == nil {
			return nil
		}
		for len(lines) > 0 && strings.TrimSpace(lines[0]) == "" {
			lines = lines[1:]
		}
		for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
			lines = lines[:len(lines)-1]
		}
		q := strings.Join(lines, "\n")
		if escaped {
			u, err := unescape(q)
			if err != nil {
				return fmt.Errorf("%s: %v", cur.pos, err)
			}
			q = u
		}
		cur.query = q
		cases = append(cases, *cur)
		cur, lines = nil, nil
		return nil
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if !strings.HasPrefix(line, expectPrefix) {
			if cur != nil {
				lines = append(lines, line)
			}
			continue
		}
		if err := flush(); err != nil {
			return nil, err
		}
		pos := fmt.Sprintf("%s:%d", path, n)
		want, esc, err := parseExpect(strings.TrimPrefix(line, expectPrefix))
		if err != nil {
			return nil, fmt.Errorf("%s: %v", pos, err)
		}
		cur, escaped = &corpusCase{pos: pos, dialect: d, want: want}, esc
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return cases, nil
}

// parseExpect parses "TARGET RULE [+session] [escaped]".
func parseExpect(s string) (d Decision, escaped bool, err error) {
	w := strings.Fields(s)
	if len(w) < 2 {
		return d, false, fmt.Errorf("want %q TARGET RULE [+session] [escaped], got %q", expectPrefix, s)
	}
	switch w[0] {
	case "primary":
		d.Target = Primary
	case "replica":
		d.Target = Replica
	case "previous":
		d.Target = Previous
	default:
		return d, false, fmt.Errorf("unknown target %q", w[0])
	}
	r, ok := ruleKeys[w[1]]
	if !ok {
		return d, false, fmt.Errorf("unknown rule %q", w[1])
	}
	d.Rule = r
	for _, o := range w[2:] {
		switch o {
		case "+session":
			d.Session = true
		case "escaped":
			escaped = true
		default:
			return d, false, fmt.Errorf("unknown option %q", o)
		}
	}
	return d, escaped, nil
}

// unescape interprets \\, \t, \n, \r, \f, \v and \xHH in s.
func unescape(s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		if i+1 >= len(s) {
			return "", fmt.Errorf("trailing backslash")
		}
		i++
		switch s[i] {
		case '\\':
			b.WriteByte('\\')
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case 'v':
			b.WriteByte('\v')
		case 'x':
			if i+2 >= len(s) {
				return "", fmt.Errorf("short \\x escape")
			}
			v, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
			if err != nil {
				return "", err
			}
			b.WriteByte(byte(v))
			i += 2
		default:
			return "", fmt.Errorf("unknown escape \\%c", s[i])
		}
	}
	return b.String(), nil
}

func TestClassifyCorpus(t *testing.T) {
	cases := loadCorpus(t)
	perFile := map[string]int{}
	for _, c := range cases {
		file, _, _ := strings.Cut(c.pos, ":")
		perFile[filepath.Base(file)]++
		got := Classify(c.query, c.dialect)
		if got != c.want {
			t.Errorf("%s: Classify(%q, %v)\n got  %v\n want %v", c.pos, c.query, c.dialect, got, c.want)
		}
		// Generic is at least as conservative as the dialect the case is
		// written for.
		if c.dialect != DialectGeneric {
			g := Classify(c.query, DialectGeneric)
			if got.Target == Primary && g.Target != Primary || got.Session && !g.Session {
				t.Errorf("%s: generic %v is less conservative than %v %v", c.pos, g, c.dialect, got)
			}
		}
	}
	for f, n := range perFile {
		t.Logf("%s: %d cases", f, n)
	}
	t.Logf("total: %d cases", len(cases))
	if len(cases) < minCorpus {
		t.Errorf("corpus has %d cases, want at least %d", len(cases), minCorpus)
	}
}

func TestRuleKeysCoverRules(t *testing.T) {
	seen := map[Rule]bool{}
	for _, r := range ruleKeys {
		seen[r] = true
	}
	for r := Rule(0); r < numRules; r++ {
		if !seen[r] {
			t.Errorf("no corpus key for %v", r)
		}
	}
}

// TestCorpusCoversRules checks every rule is exercised by the corpus.
func TestCorpusCoversRules(t *testing.T) {
	seen := map[Rule]bool{}
	for _, c := range loadCorpus(t) {
		seen[c.want.Rule] = true
	}
	for r := Rule(0); r < numRules; r++ {
		if !seen[r] {
			t.Errorf("corpus has no case for %v", r)
		}
	}
}
