// Package ascii holds the byte-wise checks of text that more than one of
// rwpool's packages makes (dsn when it validates a DSN, the driver when it
// takes what a discovery source answers, discovery when a scheme is
// registered), so that they agree.
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

// IsScheme reports whether s is a URL scheme (RFC 3986, section 3.1: a
// letter, then letters, digits, "+", "-" or "."), in either case.
func IsScheme(s string) bool {
	if s == "" || !isLetter(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; !isLetter(c) && !('0' <= c && c <= '9') && c != '+' && c != '-' && c != '.' {
			return false
		}
	}
	return true
}

// IsLowerScheme reports whether s is a URL scheme with no upper-case
// letter: the canonical form, which RFC 3986 says producers should use.
func IsLowerScheme(s string) bool {
	if !IsScheme(s) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			return false
		}
	}
	return true
}

func isLetter(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}
