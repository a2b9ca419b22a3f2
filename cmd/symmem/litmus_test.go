package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLitmusLiveness runs symmem litmus --liveness on a spin that may hang
// and one that ends: agreement is printed, and a wrong verdict fails the
// command.
func TestLitmusLiveness(t *testing.T) {
	dir := t.TempDir()
	spin := func(setTo string) string {
		return `PTX spin
{ f=0; }
 P0@cta 0,gpu 0        | P1@cta 0,gpu 0         ;
 LC00:                 | st.relaxed.gpu f, ` + setTo + ` ;
 ld.relaxed.gpu r0, f  |                        ;
 beq r0, 0, LC00       |                        ;
exists (P0: r0 == 1)
`
	}
	for name, src := range map[string]string{"hang.litmus": spin("0"), "ends.litmus": spin("1")} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	good := filepath.Join(dir, "good.csv")
	bad := filepath.Join(dir, "bad.csv")
	if err := os.WriteFile(good, []byte("hang.litmus,0\nends.litmus,1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("hang.litmus,1\nends.litmus,1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := runCmd(t, "litmus", "--liveness", good)
	if err != nil || !strings.Contains(out, "agreement: 2/2") {
		t.Fatalf("good verdicts: err %v, output:\n%s", err, out)
	}
	out, err = runCmd(t, "litmus", "--liveness", bad)
	if err == nil || !strings.Contains(out, "agreement: 1/2") || !strings.Contains(out, "DISAGREE") {
		t.Fatalf("a wrong verdict: err %v, output:\n%s", err, out)
	}
	out, err = runCmd(t, "litmus", "--terminates", filepath.Join(dir, "hang.litmus"))
	if err != nil || !strings.Contains(out, "P0 spins at line 5 reading f=0") || !strings.Contains(out, "P1 ends") {
		t.Fatalf("--terminates: err %v, output:\n%s", err, out)
	}
}
