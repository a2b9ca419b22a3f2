package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/symmem/symmem/bench"
)

// benchRow matches a table row: size count type redop algo time algbw busbw #wrong host.
var benchRow = regexp.MustCompile(`(?m)^\s+(\d+)\s+(\d+)\s+(\S+)\s+(\S+)\s+(\S+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+(\S+)\s+([\d.]+)$`)

func TestBenchSimTinySweep(t *testing.T) {
	dir := t.TempDir()
	js, cs, png := filepath.Join(dir, "b.json"), filepath.Join(dir, "b.csv"), filepath.Join(dir, "b.png")
	out, err := runCmd(t, "bench", "--world", "2", "--min", "1KiB", "--max", "16KiB", "--step", "x4", "--warmup", "0",
		"--dtype", "bf16,f32", "--algo", "one-shot,two-shot,auto", "--json", js, "--csv", cs, "--plot", png)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(out, "SIMULATOR FIGURES") || !strings.Contains(out, "# Out of bounds values : 0 OK") {
		t.Errorf("table lacks the simulator label or the all-correct footer:\n%s", out)
	}
	rows := benchRow.FindAllStringSubmatch(out, -1)
	if len(rows) != 2*3*3 {
		t.Fatalf("%d table rows, want 18 (2 dtypes x 3 algos x 3 sizes):\n%s", len(rows), out)
	}
	for _, m := range rows {
		if m[9] != "0" {
			t.Errorf("row %q: #wrong %s, want 0", strings.TrimSpace(m[0]), m[9])
		}
	}
	if rows[0][1] != "1024" || rows[0][2] != "512" || rows[0][3] != "bfloat16" || rows[0][5] != "one-shot" {
		t.Errorf("first row %q: want 1024 B, 512 bfloat16 elements, one-shot", rows[0][0])
	}
	rep, err := bench.ReadJSONFile(js)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Simulated || rep.Timer != bench.TimerHost || rep.World != 2 || len(rep.Rows) != 18 || rep.Iters != 2 || rep.Warmup != 0 {
		t.Errorf("json report: simulated %v timer %q world %d rows %d iters %d warmup %d",
			rep.Simulated, rep.Timer, rep.World, len(rep.Rows), rep.Iters, rep.Warmup)
	}
	f, err := os.Open(cs)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	csvRows, err := bench.ReadCSV(f)
	if err != nil || len(csvRows) != len(rep.Rows) || csvRows[17] != rep.Rows[17] {
		t.Errorf("csv: %d rows (%v), want the json's %d", len(csvRows), err, len(rep.Rows))
	}
	img, err := os.ReadFile(png)
	if err != nil || !bytes.HasPrefix(img, []byte("\x89PNG")) {
		t.Errorf("plot: %v, %d bytes", err, len(img))
	}

	// The plot subcommand overlays reports.
	both := filepath.Join(dir, "both.svg")
	if out, err := runCmd(t, "bench", "plot", "--out", both, js, js); err != nil || !strings.Contains(out, "wrote") {
		t.Fatalf("bench plot: %v\n%s", err, out)
	}
	if b, err := os.ReadFile(both); err != nil || !bytes.Contains(b, []byte("<svg")) {
		t.Errorf("bench plot wrote no svg: %v", err)
	}
}

func TestBenchBadFlags(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--step", "x1", "--dtype", "f64", "--op", "xor", "--algo", "ring"}, []string{"--step", "--dtype", "--op", "--algo"}},
		{[]string{"--min", "4KiB", "--max", "1KiB"}, []string{"largest size"}},
		{[]string{"--min", "6", "--max", "6", "--dtype", "f32"}, []string{"--min 6: alignment: float32 tensor size of 6 bytes"}},
		{[]string{"--device", "tpu"}, []string{`--device "tpu"`}},
		{[]string{"--world", "0"}, []string{"--world 0"}},
		{[]string{"--iters", "-1"}, []string{"iters -1"}},
		{[]string{"--loops", "0"}, []string{"loops 0"}},
		{[]string{"--ref", "x.json"}, []string{"--ref needs --plot"}},
		{[]string{"--plot", "x.bmp"}, []string{"--plot", "bmp"}},
		{[]string{"--plot", filepath.Join(dir, "p.png"), "--ref", filepath.Join(dir, "missing.json")}, []string{"--ref", "missing.json"}},
	} {
		out, err := runCmd(t, append([]string{"bench"}, tc.args...)...)
		if err == nil {
			t.Errorf("%v: no error\n%s", tc.args, out)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: error %q does not mention %q", tc.args, err, w)
			}
		}
	}
	if _, err := runCmd(t, "bench", "plot", filepath.Join(dir, "none.json")); err == nil || !strings.Contains(err.Error(), "--out") {
		t.Errorf("bench plot without --out: %v", err)
	}
}
