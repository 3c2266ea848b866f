package dsn

import (
	"errors"
	"strconv"
	"strings"
)

// ErrInvalid is matched (via errors.Is) by every *Error returned by Parse
// and Validate, and so by the error of sql.Open("rwpool", dsn) and
// rwpool.NewConnector for a bad DSN or Config.
var ErrInvalid = errors.New("rwpool: dsn: invalid configuration")

// Error describes a problem in a composite DSN or in a Config.
//
// The message never contains a node DSN (it may contain a node name), so an
// Error can be logged safely.
type Error struct {
	// Key is the DSN key or node attribute concerned ("pool_size",
	// "replica", "weight", ...). It is empty when the problem is not tied
	// to a key, or when the offending key text is withheld because it
	// might be part of a mis-quoted node DSN.
	Key string
	// Node is the name of the node concerned, or empty.
	Node string
	// Msg is a one-line description of the problem.
	Msg string
	// Offset is the byte offset in the parsed string of the offending
	// item, or -1 when unknown (for instance for errors returned by
	// Validate).
	Offset int

	syntax bool // a lexical problem (missing '=', unterminated quote, ...), not an unacceptable value
	node   int  // index of the node concerned: 0 primary, i+1 replica i, -1 none
}

// Error formats the error as
//
//	rwpool: dsn: <key>: <msg> (node "<name>") at offset <n>
//
// leaving out the parts that are empty or unknown.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("rwpool: dsn: ")
	if e.Key != "" {
		b.WriteString(e.Key)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	if e.Node != "" {
		b.WriteString(" (node ")
		b.WriteString(quoteShort(e.Node))
		b.WriteString(")")
	}
	if e.Offset >= 0 {
		b.WriteString(" at offset ")
		b.WriteString(strconv.Itoa(e.Offset))
	}
	return b.String()
}

// Is reports whether target is ErrInvalid.
func (e *Error) Is(target error) bool { return target == ErrInvalid }

// newErr returns a non-syntax error not tied to a node.
func newErr(key string, off int, msg string) *Error {
	return &Error{Key: key, Msg: msg, Offset: off, node: -1}
}

// syntaxErr returns a lexical error.
func syntaxErr(key string, off int, msg string) *Error {
	return &Error{Key: key, Msg: msg, Offset: off, syntax: true, node: -1}
}

// maxQuoted bounds the length of user text quoted in error messages.
const maxQuoted = 40

// quoteShort quotes s for an error message, truncating long text so that
// messages stay short, and escaping control characters so that they stay on
// one line.
func quoteShort(s string) string {
	if len(s) > maxQuoted {
		cut := maxQuoted
		for cut > 0 && !isRuneStart(s[cut]) {
			cut--
		}
		return strconv.Quote(s[:cut]) + "..."
	}
	return strconv.Quote(s)
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// suggest returns the candidate closest to word, or "" when none is close
// enough to be a plausible typo. Comparison is case-insensitive. Only words
// made of letters, '_' and '-' qualify: callers echo word when a suggestion
// exists, and text with digits or other symbols is more likely a fragment
// of a mis-quoted password than a typo.
func suggest(word string, candidates []string) string {
	if word == "" || len(word) > 64 {
		return ""
	}
	for i := 0; i < len(word); i++ {
		c := word[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_' || c == '-') {
			return ""
		}
	}
	w := strings.ToLower(word)
	best, bestDist := "", -1
	for _, c := range candidates {
		d := editDistance(w, c)
		if bestDist < 0 || d < bestDist {
			best, bestDist = c, d
		}
	}
	limit := 2
	if l := len(w) / 4; l > limit {
		limit = l
	}
	if bestDist >= 0 && bestDist <= limit {
		return best
	}
	// A truncated key ("readonly", "probe") is a plausible typo too.
	if len(w) >= 4 {
		for _, c := range candidates {
			if strings.HasPrefix(c, w) {
				return c
			}
		}
	}
	return ""
}

// editDistance returns the Levenshtein distance between a and b (bytes).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
