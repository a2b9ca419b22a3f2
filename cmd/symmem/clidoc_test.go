package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

const cliReferencePath = "../../docs/cli.md"

// TestCLIReferenceIsCurrent: docs/cli.md is what the generator writes from
// the command tree now, so the reference and --help cannot drift apart.
func TestCLIReferenceIsCurrent(t *testing.T) {
	var want bytes.Buffer
	if err := writeCLIReference(&want); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(cliReferencePath)
	if err != nil {
		t.Fatalf("%v: run `go generate ./cmd/symmem` to write docs/cli.md", err)
	}
	if bytes.Equal(got, want.Bytes()) {
		return
	}
	g, w := strings.Split(string(got), "\n"), strings.Split(want.String(), "\n")
	for i := 0; i < max(len(g), len(w)); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			t.Fatalf("docs/cli.md differs from the commands' --help at line %d:\n  file: %q\n  help: %q\nrun `go generate ./cmd/symmem` to regenerate it", i+1, gl, wl)
		}
	}
}

// TestCLIReferenceHasEveryCommandAndFlag: the generated reference has a
// section per command, with each flag, and each section is what that
// command's --help prints, run through the command line.
func TestCLIReferenceHasEveryCommandAndFlag(t *testing.T) {
	var ref bytes.Buffer
	if err := writeCLIReference(&ref); err != nil {
		t.Fatal(err)
	}
	doc := ref.String()
	var walk func(c *cobra.Command)
	n := 0
	walk = func(c *cobra.Command) {
		if !documented(c) {
			return
		}
		n++
		head := "\n## " + c.CommandPath() + "\n\n```\n"
		i := strings.Index(doc, head)
		if i < 0 {
			t.Errorf("the reference has no section %q", c.CommandPath())
			return
		}
		section := doc[i+len(head):]
		section = section[:strings.Index(section, "\n```\n")]
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if !f.Hidden && !strings.Contains(section, "--"+f.Name) {
				t.Errorf("section %q does not show --%s", c.CommandPath(), f.Name)
			}
		})
		args := append(strings.Fields(c.CommandPath())[1:], "--help")
		out, err := runCmd(t, args...)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		if strings.TrimRight(machineDefaults(c, out), "\n") != section {
			t.Errorf("section %q is not what %v prints:\n%s\n---\n%s", c.CommandPath(), args, section, out)
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRoot())
	if n < 10 {
		t.Errorf("the reference documents %d commands; the command has more", n)
	}
	if strings.Contains(doc, "clidoc") {
		t.Error("the reference documents the hidden clidoc command")
	}
}

// machineDefaults rewrites the defaults of c's [machineDefaultFlags] in
// its help text as the reference shows them.
func machineDefaults(c *cobra.Command, help string) string {
	lines := strings.Split(help, "\n")
	for _, name := range machineDefaultFlags {
		if c.LocalFlags().Lookup(name) == nil {
			continue
		}
		for i, l := range lines {
			if j := strings.LastIndex(l, "(default "); strings.Contains(l, "--"+name+" ") && j >= 0 {
				lines[i] = l[:j] + "(default " + machineDefault + ")"
			}
		}
	}
	return strings.Join(lines, "\n")
}
