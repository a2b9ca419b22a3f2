package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/symmem/symmem/bench"
)

// runCmdApp runs a command line in this process with a's settings under
// ctx, as main does.
func runCmdApp(t *testing.T, ctx context.Context, a *app, args ...string) (string, error) {
	t.Helper()
	root := newRootApp(a)
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	return out.String(), err
}

// interruptAfter is a context interrupted by sig after d; the channel
// gets the time of the interrupt.
func interruptAfter(t *testing.T, d time.Duration, sig syscall.Signal) (context.Context, <-chan time.Time) {
	ctx, cancel := context.WithCancelCause(context.Background())
	at := make(chan time.Time, 1)
	timer := time.AfterFunc(d, func() {
		at <- time.Now()
		cancel(&interruptedError{sig: sig})
	})
	t.Cleanup(func() { timer.Stop(); cancel(nil) })
	return ctx, at
}

// TestInterruptStopsSelftestAndAllReduce: an interrupt stops a running
// simulation within a second or two; the command prints its summary line
// and returns the interruption, whose exit status is the signal's.
func TestInterruptStopsSelftestAndAllReduce(t *testing.T) {
	for _, tc := range []struct {
		args []string
		sig  syscall.Signal
		want string
		code int
	}{
		// The interrupt comes during the first case or the second (100,000
		// leak cycles take minutes), whichever the machine's speed gives.
		{[]string{"selftest", "--cases", "intra-node-comm|leaks", "--cycles", "100000"}, syscall.SIGTERM, "selftest: interrupted by SIGTERM after ", 143},
		{[]string{"allreduce", "--world", "4", "--bytes", "16MiB"}, syscall.SIGINT, "allreduce: interrupted by SIGINT after", 130},
	} {
		ctx, at := interruptAfter(t, 300*time.Millisecond, tc.sig)
		out, err := runCmdApp(t, ctx, &app{}, tc.args...)
		var stopped time.Duration
		select {
		case sent := <-at:
			stopped = time.Since(sent)
		default:
			t.Fatalf("%v: finished before the interrupt: %v\n%s", tc.args, err, out)
		}
		var ie *interruptedError
		if !errors.As(err, &ie) || exitCode(err) != tc.code {
			t.Errorf("%v: error %v (exit %d), want the interruption (exit %d)\n%s", tc.args, err, exitCode(err), tc.code, out)
		}
		if !strings.Contains(out, tc.want) {
			t.Errorf("%v: output lacks %q:\n%s", tc.args, tc.want, out)
		}
		// Within a second or two on an idle machine; the bound leaves room
		// for a loaded one (without the halt, these runs take minutes).
		if stopped > 5*time.Second {
			t.Errorf("%v: stopped %v after the interrupt, want within a second or two", tc.args, stopped)
		}
	}
}

// TestExitCodes: 0 for success, the signal's 128+N for an interruption
// (also inside joined errors), 1 otherwise.
func TestExitCodes(t *testing.T) {
	for _, c := range []struct {
		err  error
		want int
	}{
		{nil, 0},
		{errors.New("bad"), 1},
		{&interruptedError{sig: syscall.SIGINT}, 130},
		{&interruptedError{sig: syscall.SIGTERM}, 143},
		{errors.Join(errors.New("--json: disk full"), &interruptedError{sig: syscall.SIGINT}), 130},
	} {
		if got := exitCode(c.err); got != c.want {
			t.Errorf("exitCode(%v) = %d, want %d", c.err, got, c.want)
		}
	}
}

// TestBenchInterruptedBySIGINT runs symmem bench as a process, sends it
// SIGINT once its first row is out, and checks that it stops promptly (its
// footer follows within seconds, however loaded the machine), prints
// "wrote F" for every file and the summary, writes the rows it measured,
// and exits 130.
func TestBenchInterruptedBySIGINT(t *testing.T) {
	dir := t.TempDir()
	js, cs, svg := filepath.Join(dir, "b.json"), filepath.Join(dir, "b.csv"), filepath.Join(dir, "b.svg")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=symmem bench --world 2 --min 1KiB --max 4MiB --dtype bf16,f32 --json "+js+" --csv "+cs+" --plot "+svg)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	lines := bufio.NewScanner(stdout)
	for lines.Scan() {
		out.WriteString(lines.Text() + "\n")
		if benchRow.MatchString(lines.Text()) {
			break
		}
	}
	sent := time.Now()
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	var stopped time.Duration
	for lines.Scan() {
		out.WriteString(lines.Text() + "\n")
		if stopped == 0 && strings.HasPrefix(lines.Text(), "# Out of bounds values") {
			stopped = time.Since(sent)
		}
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Errorf("exit %v, want status 130\nstdout:\n%s\nstderr:\n%s", err, out.String(), stderr.String())
	}
	if stopped == 0 || stopped > 5*time.Second { // see TestInterruptStopsSelftestAndAllReduce
		t.Errorf("the footer came %v after SIGINT, want the sweep stopped within a second or two", stopped)
	}
	if !strings.Contains(stderr.String(), "symmem: interrupted by SIGINT") {
		t.Errorf("stderr lacks the interruption:\n%s", stderr.String())
	}
	text := out.String()
	for _, want := range []string{"# Out of bounds values", "wrote " + js, "wrote " + cs, "wrote " + svg, "bench: interrupted by SIGINT after "} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	rows := len(benchRow.FindAllString(text, -1))
	rep, err := bench.ReadJSONFile(js)
	if err != nil {
		t.Fatal(err)
	}
	if rows == 0 || len(rep.Rows) != rows || rows >= 2*3*13 {
		t.Errorf("%d rows printed, %d in the JSON report: want the same, at least 1 and fewer than the whole sweep", rows, len(rep.Rows))
	}
	if st, err := os.Stat(svg); err != nil || st.Size() == 0 {
		t.Errorf("plot: %v", err)
	}
}
