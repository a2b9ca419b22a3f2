package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// docCommand is a command line found in a code block of a documentation
// page.
type docCommand struct {
	page string
	line int
	text string // as written, the leading "$ " dropped
	// transcript: written after a "$ " prompt, with what it prints below.
	transcript bool
}

var (
	// gpuOnly: a trailing comment "# GPU..." marks a command that needs a GPU.
	gpuOnly = regexp.MustCompile(`\s#\s*GPU\b`)
	// long: a trailing comment "# long..." marks a command that runs for
	// minutes (a campaign, a long sweep); it is listed, not run.
	long = regexp.MustCompile(`\s#\s*long\b`)
	// after: a trailing comment "# after ..." marks a step of a script
	// that reads what the commands before it wrote (the reports of a
	// campaign's shards); it is listed, not run.
	after = regexp.MustCompile(`\s#\s*after\b`)
	// needsShared: a command that reads the shared inputs beside the
	// repository (../shared, or the peer harnesses that name its PTX) runs
	// only where they are.
	needsShared = regexp.MustCompile(`\.\./shared/|examples/peers/`)
	// exitsOne: a trailing comment "# exits 1..." marks a command that
	// reports a failure on purpose.
	exitsOne = regexp.MustCompile(`\s#\s*exits 1\b`)
	// placeholder: an argument in capitals (FILE, HARNESS.json) or naming
	// the reader's own file (my_kernel.ptx) makes the line a synopsis.
	placeholder = regexp.MustCompile(`(^|\s)([A-Z][A-Z0-9_]+(\.[a-z]+)?|my_\S+)(\s|$)`)
	// commandLineError: what a failure of the command line itself says.
	commandLineError = regexp.MustCompile(`unknown (flag|shorthand flag|command)|invalid argument|no such file or directory`)
)

// docCommands returns the commands of a Markdown page: the lines of its
// indented or fenced code blocks that start with `symmem` or
// `go run ./cmd/symmem` (after an optional "$ " prompt). Synopses, lines
// with [options], "..." or placeholders, are not commands.
func docCommands(t *testing.T, page string) []docCommand {
	t.Helper()
	f, err := os.Open(page)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var cmds []docCommand
	fenced := false
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		var code string
		switch {
		case fenced:
			code = strings.TrimSpace(line)
		case strings.HasPrefix(line, "    "):
			code = strings.TrimSpace(line)
		default:
			continue
		}
		transcript := strings.HasPrefix(code, "$ ")
		code = strings.TrimPrefix(code, "$ ")
		if !(code == "symmem" || strings.HasPrefix(code, "symmem ") || strings.HasPrefix(code, "go run ./cmd/symmem")) {
			continue
		}
		if strings.Contains(code, "[") || strings.Contains(code, "...") || placeholder.MatchString(commandPart(code)) {
			continue
		}
		cmds = append(cmds, docCommand{page: page, line: n, text: code, transcript: transcript})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return cmds
}

// commandPart is a command line without its trailing comment.
func commandPart(s string) string {
	if i := strings.Index(s, " #"); i >= 0 {
		return s[:i]
	}
	return s
}

// docPages are README.md and the pages of docs/, but the generated CLI
// reference, whose usage lines are synopses.
func docPages(t *testing.T, root string) []string {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := []string{filepath.Join(root, "README.md")}
	for _, p := range pages {
		if filepath.Base(p) != "cli.md" {
			out = append(out, p)
		}
	}
	return out
}

// TestDocCommandsRun runs, as written, every command of the README and the
// docs pages that needs no GPU, with the command built once: `symmem` and
// `go run ./cmd/symmem` both run that binary, from the repository root.
// A command must exit 0, or 1 where its comment says "exits 1" or where
// it is a transcript ("$ symmem ..." and what it prints), and never for its
// command line (a flag, a missing file); one that checks a trace hash must
// say it matches. Commands marked "# GPU" (needs a GPU), "# long" (runs
// for minutes) or "# after" (a script's step that reads what the
// commands before it wrote) are listed and not run.
func TestDocCommandsRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command and runs the documented commands")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool to build the command with")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	var cmds []docCommand
	for _, p := range docPages(t, root) {
		cmds = append(cmds, docCommands(t, p)...)
	}
	readme := 0
	for _, c := range cmds {
		if filepath.Base(c.page) == "README.md" {
			readme++
		}
	}
	if readme < 5 {
		t.Fatalf("found %d commands in README.md; the extraction is broken", readme)
	}
	_, err = os.Stat(filepath.Join(root, "..", "shared"))
	sharedThere := err == nil
	bin := t.TempDir()
	build := exec.Command(goTool, "build", "-o", filepath.Join(bin, "symmem"), ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, c := range cmds {
		where := fmt.Sprintf("%s:%d", filepath.Base(c.page), c.line)
		if gpuOnly.MatchString(c.text) {
			t.Logf("%s: needs a GPU, not run: %s", where, c.text)
			continue
		}
		if long.MatchString(c.text) {
			t.Logf("%s: runs for minutes, not run: %s", where, c.text)
			continue
		}
		if needsShared.MatchString(commandPart(c.text)) && !sharedThere {
			t.Logf("%s: needs ../shared beside the repository, not run: %s", where, c.text)
			continue
		}
		if after.MatchString(c.text) {
			t.Logf("%s: a step after the commands above, not run: %s", where, c.text)
			continue
		}
		if strings.HasSuffix(strings.TrimSpace(commandPart(c.text)), "&") {
			t.Errorf("%s: %q runs in the background, which this test cannot judge: mark it \"# long\" or \"# after\"", where, c.text)
			continue
		}
		if strings.Contains(commandPart(c.text), "--device cuda") {
			t.Errorf("%s: %q runs on a GPU but its comment does not say \"# GPU\"", where, c.text)
			continue
		}
		line := strings.Replace(c.text, "go run ./cmd/symmem", "symmem", 1)
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		cmd := exec.CommandContext(ctx, "bash", "-c", line)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
		out, err := cmd.CombinedOutput()
		timedOut := ctx.Err() == context.DeadlineExceeded
		cancel()
		status := 0
		if err != nil {
			ee, ok := err.(*exec.ExitError)
			if !ok {
				t.Errorf("%s: %s: %v", where, c.text, err)
				continue
			}
			status = ee.ExitCode()
		}
		want := 0
		if exitsOne.MatchString(c.text) || c.transcript && status == 1 {
			want = 1 // a transcript shows what the command reports, failures too
		}
		text := string(out)
		switch {
		case timedOut:
			t.Errorf("%s: %s: did not finish in 3 minutes", where, c.text)
		case status != want:
			t.Errorf("%s: %s: exit status %d, want %d\n%s", where, c.text, status, want, tail(text))
		case want == 1 && commandLineError.MatchString(text):
			t.Errorf("%s: %s: failed for its command line, not for what it reports:\n%s", where, c.text, tail(text))
		case strings.Contains(commandPart(c.text), "--expect-trace") && !strings.Contains(text, "trace matches"):
			t.Errorf("%s: %s: the trace does not match\n%s", where, c.text, tail(text))
		default:
			t.Logf("%s: ran: %s", where, c.text)
		}
	}
}

// TestDocCommandsExtraction: the rules that pick commands out of a page.
func TestDocCommandsExtraction(t *testing.T) {
	page := filepath.Join(t.TempDir(), "page.md")
	text := "text symmem allreduce\n\n" +
		"    symmem allreduce --world 2\n" +
		"    $ symmem version\n" +
		"    symmem: an error line\n" +
		"    symmem check HARNESS.json [--seeds 20]\n" +
		"    symmem check --ptx FILE --list-unsupported\n" +
		"    symmem check my_kernel.json --seeds 20\n" +
		"    go run ./cmd/symmem allreduce\n" +
		"    nvcc -ptx k.cu\n" +
		"```\nsymmem topo    # GPU\n```\n" +
		"    symmem fuzz --seeds 100000    # long: 46 minutes\n"
	if err := os.WriteFile(page, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range docCommands(t, page) {
		got = append(got, c.text)
	}
	want := []string{"symmem allreduce --world 2", "symmem version", "go run ./cmd/symmem allreduce", "symmem topo    # GPU", "symmem fuzz --seeds 100000    # long: 46 minutes"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("commands:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !gpuOnly.MatchString(got[3]) || gpuOnly.MatchString(got[0]) {
		t.Error("the GPU marker rule is wrong")
	}
	if !long.MatchString(got[4]) || long.MatchString(got[3]) {
		t.Error("the long marker rule is wrong")
	}
}

// tail is the last lines of a command's output, for an error message.
func tail(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > 15 {
		lines = lines[len(lines)-15:]
	}
	return strings.Join(lines, "\n")
}
