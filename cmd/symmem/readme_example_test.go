package main

import (
	"os"
	"strings"
	"testing"
)

// TestREADMEFirstRunIsWhatTheCommandPrints: the README's first-run example
// (the lines after "$ symmem allreduce", table and trace line included) is
// exactly what the command prints.
func TestREADMEFirstRunIsWhatTheCommandPrints(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	const prompt = "    $ symmem allreduce\n"
	readme := string(b)
	i := strings.Index(readme, prompt)
	if i < 0 {
		t.Fatalf("README has no %q example", strings.TrimSpace(prompt))
	}
	var want []string
	for _, line := range strings.Split(readme[i+len(prompt):], "\n") {
		if !strings.HasPrefix(line, "    ") {
			break
		}
		want = append(want, strings.TrimPrefix(line, "    "))
	}
	out, err := runCmd(t, "allreduce")
	if err != nil {
		t.Fatalf("symmem allreduce: %v\n%s", err, out)
	}
	got := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("README's first run:\n%s\n\nthe command prints:\n%s", strings.Join(want, "\n"), strings.Join(got, "\n"))
	}
}
