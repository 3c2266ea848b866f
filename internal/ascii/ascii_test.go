package ascii

import (
	"regexp"
	"testing"
)

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

func TestIsScheme(t *testing.T) {
	for _, tc := range []struct {
		s          string
		any, lower bool
	}{
		{"", false, false},
		{"dns", true, true},
		{"srv", true, true},
		{"patroni", true, true},
		{"svc+v2.x-y", true, true},
		{"a1", true, true},
		{"DNS", true, false},
		{"Patroni", true, false},
		{"pAtroni", true, false},
		{"1x", false, false},
		{"+x", false, false},
		{"x_y", false, false},
		{"x y", false, false},
		{"x:", false, false},
		{"é", false, false},
	} {
		if got := IsScheme(tc.s); got != tc.any {
			t.Errorf("IsScheme(%q) = %v, want %v", tc.s, got, tc.any)
		}
		if got := IsLowerScheme(tc.s); got != tc.lower {
			t.Errorf("IsLowerScheme(%q) = %v, want %v", tc.s, got, tc.lower)
		}
	}
}

// TestIsSchemeGrammar checks both against RFC 3986's grammar, written as
// regular expressions, for every string of up to two bytes and for three
// bytes over the characters near the grammar's edges.
func TestIsSchemeGrammar(t *testing.T) {
	anyCase := regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*$`)
	lower := regexp.MustCompile(`^[a-z][a-z0-9+.-]*$`)
	check := func(s string) {
		if got, want := IsScheme(s), anyCase.MatchString(s); got != want {
			t.Errorf("IsScheme(%q) = %v, want %v", s, got, want)
		}
		if got, want := IsLowerScheme(s), lower.MatchString(s); got != want {
			t.Errorf("IsLowerScheme(%q) = %v, want %v", s, got, want)
		}
	}
	check("")
	for a := range 256 {
		check(string([]byte{byte(a)}))
		for b := range 256 {
			check(string([]byte{byte(a), byte(b)}))
		}
	}
	edges := []byte("\x00 *+,-./09:@AZ[_`az{\x7f\x80\xff")
	for _, a := range edges {
		for _, b := range edges {
			for _, c := range edges {
				check(string([]byte{a, b, c}))
			}
		}
	}
}
