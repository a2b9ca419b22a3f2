package main

import (
	"bytes"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/symmem/symmem/device/cuda"
)

func runCmd(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := newRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}

var traceLine = regexp.MustCompile(`(?m)^trace ([0-9a-f]{64})$`)

func trace(t *testing.T, args ...string) string {
	t.Helper()
	out, err := runCmd(t, args...)
	if err != nil {
		t.Fatalf("%v: %v\n%s", args, err, out)
	}
	m := traceLine.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("%v: no trace line in\n%s", args, out)
	}
	return m[1]
}

func TestAllReduceTraceIsStablePerSeed(t *testing.T) {
	a := trace(t, "allreduce", "--seed", "7")
	if b := trace(t, "allreduce", "--seed", "7"); a != b {
		t.Fatalf("seed 7 gave %s then %s", a, b)
	}
	if c := trace(t, "allreduce", "--seed", "8"); c == a {
		t.Fatal("seeds 7 and 8 gave the same trace")
	}
}

func TestAllReduceIssueExamples(t *testing.T) {
	for _, args := range [][]string{
		{"allreduce", "--world", "8", "--bytes", "8196", "--dtype", "bf16", "--offset", "16"},
		{"allreduce", "--algo", "two-shot", "--world", "3", "--bytes", "1MiB", "--dtype", "f16", "--op", "max"},
	} {
		out, err := runCmd(t, args...)
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		if !strings.Contains(out, " ok") || strings.Contains(out, "FAIL") {
			t.Fatalf("%v: no passing summary:\n%s", args, out)
		}
	}
}

func TestAllReduceBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"allreduce", "--dtype", "int8"}, `--dtype: unknown dtype "int8"`},
		{[]string{"allreduce", "--bytes", "lots"}, `--bytes: byte size "lots"`},
		{[]string{"allreduce", "--op", "prod"}, `--op: unknown reduce op "prod"`},
		{[]string{"allreduce", "--algo", "three-shot"}, `--algo: unknown algorithm`},
		{[]string{"allreduce", "--world", "0"}, `--world 0`},
		{[]string{"allreduce", "--bytes", "6", "--dtype", "bf16"}, `size of 6 bytes is not a multiple of 4`},
		{[]string{"allreduce", "--offset", "2"}, `offset of 2 bytes`},
		{[]string{"allreduce", "--device", "tpu"}, `--device "tpu"`},
	} {
		out, err := runCmd(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want it to mention %q\n%s", tc.args, err, tc.want, out)
		}
	}
}

// TestAllReduceWithoutDriver: without libcuda, --device cuda fails at once
// naming the missing driver.
func TestAllReduceWithoutDriver(t *testing.T) {
	if _, err := cuda.DeviceCount(); err == nil {
		t.Skip("a CUDA driver is present")
	}
	_, err := runCmd(t, "allreduce", "--device", "cuda")
	if err == nil || !strings.Contains(err.Error(), "no CUDA driver found (libcuda.so.1)") {
		t.Fatalf("--device cuda without a driver: %v", err)
	}
}

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]uint64{"8196": 8196, "64KiB": 64 << 10, "1MiB": 1 << 20, "2G": 2 << 30, "4k": 4096, "16B": 16} {
		got, err := parseBytes(in)
		if err != nil || got != want {
			t.Errorf("parseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "-1", "1.5MiB", "KiB", "99999999999999999999"} {
		if _, err := parseBytes(bad); err == nil {
			t.Errorf("parseBytes(%q) accepted", bad)
		}
	}
}

// TestVersion: version and --version print the same line, and it carries
// the build's version-control information when the Go tool recorded it.
func TestVersion(t *testing.T) {
	out, err := runCmd(t, "version")
	if err != nil || !strings.HasPrefix(out, "symmem ") || strings.Count(out, "\n") != 1 {
		t.Fatalf("version: %q, %v", out, err)
	}
	flag, err := runCmd(t, "--version")
	if err != nil || flag != out {
		t.Errorf("--version: %q, %v; want %q", flag, err, out)
	}
	info := &debug.BuildInfo{GoVersion: "go1.25.0", Main: debug.Module{Version: "v1.2.3"}, Settings: []debug.BuildSetting{
		{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "5176ace7ebea0123456789abcdef0123456789ab"},
		{Key: "vcs.time", Value: "2025-01-02T03:04:05Z"}, {Key: "vcs.modified", Value: "true"},
	}}
	for _, c := range []struct {
		linked string
		info   *debug.BuildInfo
		want   string
	}{
		{"", info, "symmem v1.2.3 commit 5176ace7ebea 2025-01-02T03:04:05Z modified go1.25.0"},
		{"v2.0.0", info, "symmem v2.0.0 commit 5176ace7ebea 2025-01-02T03:04:05Z modified go1.25.0"},
		{"", &debug.BuildInfo{GoVersion: "go1.25.0", Main: debug.Module{Version: "(devel)"}}, "symmem (devel) commit unknown (built without version control information) go1.25.0"},
		{"", nil, "symmem (unknown version) (no build information)"},
	} {
		if got := describeBuild(c.linked, c.info); got != c.want {
			t.Errorf("describeBuild(%q, ...) = %q, want %q", c.linked, got, c.want)
		}
	}
}

// TestAllReduceDebugLog: --log-level debug shows what the ranks do on the
// simulator, and the default level shows nothing.
func TestAllReduceDebugLog(t *testing.T) {
	out, err := runCmd(t, "allreduce", "--world", "2", "--bytes", "4KiB", "--log-level", "debug")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{
		`DEBUG	alloc	{"rank": 0, "bytes": 4224`,
		`DEBUG	all-reduce algorithm	{"rank": 1, "group": "world", "requested": "auto", "algo": "ll"`,
		`DEBUG	rendezvous done	{"rank": 0, "group": "world", "members": [0, 1]`,
		`DEBUG	launch	{"rank": 1, "group": "world", "kernel": "ll_all_reduce"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("debug log lacks %q:\n%s", want, out)
		}
	}
	if out, err := runCmd(t, "allreduce", "--world", "2", "--bytes", "4KiB"); err != nil || strings.Contains(out, "DEBUG") {
		t.Errorf("default level: %v\n%s", err, out)
	}
}
