package main

import (
	"context"
	"io"
	"strings"
	"testing"
)

// TestProgressOnlyOnATerminal: on a terminal bench and selftest draw a
// progress bar (and still print every row and their summary line); piped,
// they print no control sequences at all.
func TestProgressOnlyOnATerminal(t *testing.T) {
	terminal := &app{terminal: func(io.Writer) bool { return true }}
	for _, tc := range []struct {
		args    []string
		bar     string
		summary string
	}{
		{[]string{"bench", "--world", "2", "--min", "1KiB", "--max", "4KiB", "--algo", "one-shot"}, "bench 3/3", "bench: 3 cases in "},
		{[]string{"selftest", "--cases", "^(groups|signals-42-43|alloc-id)$"}, "selftest 3/3", "selftest: 3 cases ok in "},
	} {
		out, err := runCmdApp(t, context.Background(), terminal, tc.args...)
		if err != nil {
			t.Fatalf("%v: %v\n%s", tc.args, err, out)
		}
		if !strings.Contains(out, tc.bar) || !strings.Contains(out, tc.summary) {
			t.Errorf("%v on a terminal: no %q bar or no %q summary:\n%q", tc.args, tc.bar, tc.summary, out)
		}
		if lines := strings.Split(strings.TrimSpace(out), "\n"); !strings.HasPrefix(lines[len(lines)-1], tc.summary) {
			t.Errorf("%v: the summary is not the last line:\n%s", tc.args, out)
		}
		piped, err := runCmd(t, tc.args...)
		if err != nil || strings.Contains(piped, "\x1b[") || strings.Contains(piped, tc.bar) {
			t.Errorf("%v piped: %v, progress shown:\n%q", tc.args, err, piped)
		}
		if !strings.Contains(piped, tc.summary) {
			t.Errorf("%v piped: no summary line:\n%s", tc.args, piped)
		}
	}
}
