package examples_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestREADMESnippets checks that every Go snippet of README.md is copied
// verbatim from the example it names (<!-- snippet: dir/file.go --> on the
// line before the code block), so that the README only shows code that
// compiles and is tested. A snippet may come from inside a function: its
// lines must match consecutive lines of the file under one common
// indentation.
func TestREADMESnippets(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile("(?s)(<!-- snippet: ([^ ]+) -->\n)?```go\n(.*?)```")
	n := 0
	for _, m := range re.FindAllStringSubmatch(string(readme), -1) {
		block := m[3]
		if m[2] == "" {
			t.Errorf("a Go snippet without <!-- snippet: file --> before it:\n%s", block)
			continue
		}
		src, err := os.ReadFile(filepath.FromSlash(m[2]))
		if err != nil {
			t.Errorf("snippet source: %v", err)
			continue
		}
		if !contains(strings.Split(string(src), "\n"), strings.Split(strings.TrimSuffix(block, "\n"), "\n")) {
			t.Errorf("snippet not found verbatim in %s:\n%s", m[2], block)
		}
		n++
	}
	if n == 0 {
		t.Fatal("no snippets found in README.md")
	}
}

// contains reports whether the lines of block appear consecutively in
// file, each file line being one common prefix plus the block line (empty
// lines match empty lines).
func contains(file, block []string) bool {
	for start := range file {
		if start+len(block) > len(file) {
			return false
		}
		first := file[start]
		if !strings.HasSuffix(first, block[0]) {
			continue
		}
		prefix := first[:len(first)-len(block[0])]
		if strings.Trim(prefix, "\t") != "" {
			continue
		}
		ok := true
		for i, bl := range block {
			fl := file[start+i]
			if bl == "" && fl == "" {
				continue
			}
			if fl != prefix+bl {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}
