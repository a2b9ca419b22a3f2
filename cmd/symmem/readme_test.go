package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// TestREADMEDocumentsEveryFlag: every subcommand and every flag the help
// shows appears in the README or in the documents of docs/ (the
// campaign commands and flags in docs/campaigns.md), so that help and
// documentation cannot drift apart.
func TestREADMEDocumentsEveryFlag(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	docs, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		more, err := os.ReadFile(d)
		if err != nil {
			t.Fatal(err)
		}
		b = append(b, more...)
	}
	readme := string(b)
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" {
			return
		}
		if c.HasParent() && !strings.Contains(readme, c.CommandPath()) {
			t.Errorf("README does not mention %q", c.CommandPath())
		}
		check := func(f *pflag.Flag) {
			if f.Name != "help" && !strings.Contains(readme, "--"+f.Name) {
				t.Errorf("README does not document %s --%s (%s)", c.CommandPath(), f.Name, f.Usage)
			}
		}
		c.LocalFlags().VisitAll(check)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRoot())
}
