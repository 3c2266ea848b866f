package rwpool

import (
	"strings"

	"github.com/rwpool/rwpool/dsn"
)

// redactErr hides the secrets of nodeDSN in err's message. Drivers may echo
// the DSN they were given (or parts of it) in parse errors; rwpool never
// lets those reach a log. errors.Is and errors.As still reach err.
func redactErr(err error, nodeDSN string) error {
	if err == nil {
		return nil
	}
	secret := secretOf(nodeDSN)
	msg := err.Error()
	if secret == "" || !strings.Contains(msg, secret) {
		return err
	}
	return &redactedError{msg: strings.ReplaceAll(msg, secret, "***"), err: err}
}

// secretOf returns the part of nodeDSN that dsn.Redact hides: the span
// between the longest common prefix and suffix of the DSN and its redacted
// form. With several secrets it spans all of them, which over-redacts
// rather than leaks.
func secretOf(nodeDSN string) string {
	red := dsn.Redact(nodeDSN)
	if red == nodeDSN {
		return ""
	}
	p := 0
	for p < len(red) && p < len(nodeDSN) && red[p] == nodeDSN[p] {
		p++
	}
	s := 0
	for s < len(red)-p && s < len(nodeDSN)-p && red[len(red)-1-s] == nodeDSN[len(nodeDSN)-1-s] {
		s++
	}
	return nodeDSN[p : len(nodeDSN)-s]
}
