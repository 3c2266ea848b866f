package ascii

import "testing"

func TestHasControl(t *testing.T) {
	for _, tc := range []struct {
		s    string
		want bool
	}{
		{"", false},
		{"pg-1/r 2", false},
		{"~", false},
		{"é\u0085", false}, // bytes >= 0x80: not ASCII controls
		{"a\x00", true},
		{"\tb", true},
		{"a\nb", true},
		{"\x1f", true},
		{"x\x7f", true},
	} {
		if got := HasControl(tc.s); got != tc.want {
			t.Errorf("HasControl(%q) = %v, want %v", tc.s, got, tc.want)
		}
	}
}
