package ptxcheck

import (
	"strings"
	"testing"
)

// TestSourceLine: Line returns every line of the text, trimmed, and ""
// outside it, as splitting the text at its newlines gives them.
func TestSourceLine(t *testing.T) {
	for _, text := range []string{"", "one", "a\n  b  \n\nc", "x\n", "\n\n", "\tld.global.u32 %r1, [%rd1];\r\nret;"} {
		s := &Source{Text: text}
		lines := strings.Split(text, "\n")
		for n := -1; n <= len(lines)+1; n++ {
			want := ""
			if n >= 1 && n <= len(lines) {
				want = strings.TrimSpace(lines[n-1])
			}
			if got := s.Line(n); got != want {
				t.Errorf("%q line %d: %q, want %q", text, n, got, want)
			}
		}
	}
}
