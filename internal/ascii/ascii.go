// Package ascii holds the byte-wise checks of text that more than one of
// rwpool's packages makes (dsn when it validates a DSN, the driver when it
// takes what a discovery source answers), so that they agree.
package ascii

// HasControl reports whether s contains an ASCII control character: a byte
// below 0x20, or DEL (0x7f).
func HasControl(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] == 0x7f {
			return true
		}
	}
	return false
}
