package routing

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"strings"
	"testing"
)

// checkFastPath checks that Classify, with its plain-read fast path, agrees
// with the full scanner on q in every dialect.
func checkFastPath(t *testing.T, q string) {
	t.Helper()
	for _, d := range allDialects {
		if got, want := Classify(q, d), classifyFull(q, d); got != want {
			t.Fatalf("Classify(%q, %v) = %v, but the full scanner says %v", q, d, got, want)
		}
	}
}

func TestFastPathAgreesOnCorpus(t *testing.T) {
	for _, c := range loadCorpus(t) {
		checkFastPath(t, c.query)
	}
}

// TestFastPathAgreesOnTraps puts every trigger word and lexical trap the
// fast path must notice into an otherwise plain read.
func TestFastPathAgreesOnTraps(t *testing.T) {
	var traps []string
	for _, w := range triggerWords {
		traps = append(traps, w, strings.ToUpper(w), w+"(1)", w+" /* c */ (1)",
			`"`+w+`"(1)`, "`"+w+"`(1)", "s."+w+"(1)", "'"+w+"'")
	}
	traps = append(traps,
		"pg_advisory_lock(1)", "PG_TRY_ADVISORY_XACT_LOCK(1)", `"pg_advisory_lock x"(1)`,
		"NEXT VALUE FOR s", "x LOCK IN SHARE MODE", "x FOR NO KEY UPDATE",
		"@x", "@@x", "'u'@'h'", "E'a\\'b'", "e'x'", "$$x$$", "$t$x$t$", "$1", "$",
		"'a\\'b'", `"a\"b"`, "`a`", "#c\n1", "--c\n1", "-- c\n1", "--", "1--1", "1 - -1",
		"/*!1*/", "/*!50000 x*/", "/*M!1*/", "/* /* */ */", "/*/**/*/", "/*/ */", "/**/",
		"/* a", "'a", `"a`, "`a", "$$a", "1;", "1; ", "1; SELECT 2", "1;;", "1; --c",
		"'a''b'", `"a""b"`, "1e'x'", "1.e5", "x.1for", "a$for", "$1for", "\x00", "\\", "é for",
		"1 INTO x", "1 INTO TEMP x", "SQL_CALC_FOUND_ROWS 1", "(SELECT 1 FOR UPDATE)",
	)
	lead := []string{"", " ", "\n", "/* c */ ", "-- c\n", "# c\n", "--c\n", "/*rwpool:replica*/ ",
		"/* rwpool : primary */", "/*!SELECT*/ ", "(", ";", "(SELECT) "}
	for _, l := range lead {
		for _, kw := range []string{"SELECT", "select", "WITH", "SHOW", "VALUES", "TABLE", "EXPLAIN", "SET", "selectx", "e"} {
			for _, tr := range traps {
				checkFastPath(t, l+kw+" a, "+tr+" FROM t")
				checkFastPath(t, l+kw+" "+tr)
			}
		}
	}
}

// TestTriggerWordsCoverFuncFlags checks that every function name funcFlags
// knows is a trigger word (or matches one of its prefixes), so the fast
// path never misses a function call.
func TestTriggerWordsCoverFuncFlags(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "classify_words.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{"pg_advisory_": true, "pg_try_advisory_": true, "xact_": true}
	for _, w := range triggerWords {
		known[w] = true
	}
	n := 0
	ast.Inspect(f, func(node ast.Node) bool {
		fd, ok := node.(*ast.FuncDecl)
		if !ok || fd.Name.Name != "funcFlags" {
			return true
		}
		ast.Inspect(fd.Body, func(node ast.Node) bool {
			lit, ok := node.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				t.Fatal(err)
			}
			n++
			if !known[s] {
				t.Errorf("funcFlags knows %q, which triggerWords lacks", s)
			}
			return true
		})
		return false
	})
	if n < 20 {
		t.Errorf("found %d names in funcFlags, want at least 20", n)
	}
	for _, w := range triggerWords {
		if trigger(w, "") != true || maybeTrigger[w[0]]>>len(w)&1 == 0 || maybeTrigger[w[0]-'a'+'A']>>len(w)&1 == 0 {
			t.Errorf("trigger word %q is not caught", w)
		}
	}
}
