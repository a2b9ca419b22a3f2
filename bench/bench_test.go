package bench

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/kernels"
	"github.com/symmem/symmem/oracle"
	"github.com/symmem/symmem/simjob"
	"github.com/symmem/symmem/workload"
)

func TestSizes(t *testing.T) {
	for _, tc := range []struct {
		min, max, step uint64
		want           []uint64
	}{
		{1 << 10, 1 << 13, 2, []uint64{1 << 10, 1 << 11, 1 << 12, 1 << 13}},
		{1 << 10, 1 << 15, 4, []uint64{1 << 10, 1 << 12, 1 << 14}}, // max not on the grid
		{4096, 4096, 2, []uint64{4096}},
		{3, 100, 3, []uint64{3, 9, 27, 81}},
	} {
		got, err := Sizes(tc.min, tc.max, tc.step)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Sizes(%d, %d, %d) = %v, %v; want %v", tc.min, tc.max, tc.step, got, err, tc.want)
		}
	}
	got, err := Sizes(1<<10, 256<<20, 2)
	if err != nil || len(got) != 19 || got[18] != 256<<20 {
		t.Errorf("default sweep: %d sizes ending %v (%v), want 19 ending at 256 MiB", len(got), got[len(got)-1:], err)
	}
	// The largest representable ranges must stop without overflowing.
	if got, err := Sizes(1<<62, math.MaxUint64, 2); err != nil || len(got) != 2 {
		t.Errorf("Sizes near the top of uint64 = %v, %v; want 2 sizes", got, err)
	}
	if got, err := Sizes(1, math.MaxUint64, 2); err != nil || len(got) != 64 || got[63] != 1<<63 {
		t.Errorf("Sizes(1, max, 2): %d sizes, %v", len(got), err)
	}
	for _, bad := range [][3]uint64{{0, 10, 2}, {10, 5, 2}, {1, 10, 1}} {
		if _, err := Sizes(bad[0], bad[1], bad[2]); err == nil {
			t.Errorf("Sizes%v: no error", bad)
		}
	}
}

func TestParseStep(t *testing.T) {
	for s, want := range map[string]uint64{"x2": 2, "x4": 4, "4": 4, " X8 ": 8} {
		if got, err := ParseStep(s); err != nil || got != want {
			t.Errorf("ParseStep(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
	for _, s := range []string{"", "x", "x1", "x0", "two", "x-2", "x2048"} {
		if _, err := ParseStep(s); err == nil {
			t.Errorf("ParseStep(%q): no error", s)
		}
	}
}

func TestBandwidthMath(t *testing.T) {
	if got := BusFactor(4); got != 1.5 {
		t.Errorf("BusFactor(4) = %v, want 1.5", got)
	}
	if got := BusFactor(8); got != 1.75 {
		t.Errorf("BusFactor(8) = %v, want 1.75", got)
	}
	if got := BusFactor(1); got != 0 {
		t.Errorf("BusFactor(1) = %v, want 0", got)
	}
	// 64 MiB in 323.8 us at world 4 (the reference README's NCCL row, which
	// it lists as busbw 311 GB/s): 67108864 B / 323.8 us = 207.254 GB/s.
	alg, bus := AlgBW(64<<20, 323.8), BusBW(64<<20, 323.8, 4)
	if math.Abs(alg-207.2541) > 1e-3 || math.Abs(bus-310.8811) > 1e-3 {
		t.Errorf("64 MiB in 323.8us: algbw %v busbw %v, want 207.254 and 310.881", alg, bus)
	}
	if AlgBW(1024, 0) != 0 || BusBW(1024, -1, 4) != 0 || AlgBW(1024, math.NaN()) != 0 {
		t.Error("a non-positive time must give zero bandwidth, not infinity")
	}
	if got := Micros(1500 * time.Nanosecond); got != 1.5 {
		t.Errorf("Micros(1.5us) = %v", got)
	}
}

func TestMedianAndMean(t *testing.T) {
	xs := []float64{5, 1, 3}
	if got := Median(xs); got != 3 {
		t.Errorf("Median(5,1,3) = %v", got)
	}
	if xs[0] != 5 {
		t.Error("Median sorted its argument in place")
	}
	if got := Median([]float64{4, 1, 3, 2}); got != 2.5 {
		t.Errorf("Median(4,1,3,2) = %v, want 2.5", got)
	}
	if Median(nil) != 0 || Mean(nil) != 0 {
		t.Error("empty input must give 0")
	}
	if got := Mean([]float64{1, 2, 6}); got != 3 {
		t.Errorf("Mean = %v", got)
	}
}

func TestFormatTimeLikeNCCLTests(t *testing.T) {
	for us, want := range map[float64]string{
		14.6:    "  14.60",
		323.84:  "  323.8",
		12345.6: "  12346",
		0:       "   0.00",
	} {
		if got := FormatTime(us); got != want {
			t.Errorf("FormatTime(%v) = %q, want %q", us, got, want)
		}
	}
}

func TestFormatRowColumns(t *testing.T) {
	r := Row{Impl: Impl, Algo: "two-shot", DType: "bfloat16", Op: "sum", World: 4, Bytes: 64 << 20, Count: 32 << 20,
		TimeUs: 337.6, HostUs: 340.25, AlgBW: AlgBW(64<<20, 337.6), BusBW: BusBW(64<<20, 337.6, 4), Wrong: 0}
	want := "    67108864      33554432  bfloat16     sum       two-shot    337.6  198.78  298.17       0    340.2"
	if got := FormatRow(r); got != want {
		t.Errorf("FormatRow:\n got %q\nwant %q", got, want)
	}
	r.Wrong = -1
	if got := FormatRow(r); !strings.Contains(got, "   N/A ") {
		t.Errorf("unchecked row shows no N/A: %q", got)
	}
	var hdr bytes.Buffer
	if err := WriteHeader(&hdr, Report{Tool: "t", Device: "cuda", DeviceName: "GPU", World: 4, Timer: TimerDevice}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(hdr.String(), "\n"), "\n")
	names, units := lines[len(lines)-2], lines[len(lines)-1]
	// Every column name ends where its values end.
	for _, col := range []struct{ name, value string }{{"size", "67108864"}, {"count", "33554432"}, {"algo", "two-shot"}, {"busbw", "298.17"}, {"host", "340.2"}} {
		if end(names, col.name) != end(want, col.value) {
			t.Errorf("column %s ends at %d, its value at %d\n%s\n%s", col.name, end(names, col.name), end(want, col.value), names, want)
		}
	}
	if end(units, "(GB/s)") != end(want, "198.78") {
		t.Errorf("units misaligned:\n%s\n%s", units, want)
	}
	if strings.Contains(hdr.String(), "SIMULATOR") {
		t.Error("a device report is labelled as simulator figures")
	}
}

func end(line, word string) int { return strings.Index(line, word) + len(word) }

func TestFooterCountsWrongAndAverages(t *testing.T) {
	rows := []Row{
		{Impl: Impl, Algo: "one-shot", BusBW: 10, Wrong: 0},
		{Impl: Impl, Algo: "one-shot", BusBW: 30, Wrong: 2},
		{Impl: Impl, Algo: "two-shot", BusBW: 50, Wrong: -1},
	}
	var b bytes.Buffer
	if err := WriteFooter(&b, rows); err != nil {
		t.Fatal(err)
	}
	s := b.String()
	for _, want := range []string{
		"# Out of bounds values : 2 FAILED (1 cases unchecked)",
		"# Avg bus bandwidth    : 30\n",
		"symmem one-shot                 : 20 GB/s average, 30 GB/s peak",
		"symmem two-shot                 : 50 GB/s average, 50 GB/s peak",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("footer lacks %q:\n%s", want, s)
		}
	}
}

func sampleReport() Report {
	return Report{
		Schema: Schema, Tool: "symmem bench", Device: "cuda", DeviceName: "NVIDIA H200", World: 4,
		Timer: TimerDevice, Warmup: 20, Iters: 100, Loops: 5, Note: "two lines\nof note",
		Rows: []Row{
			{Impl: Impl, Algo: "one-shot", DType: "bfloat16", Op: "sum", World: 4, Bytes: 1024, Count: 512,
				TimeUs: 14.6, DeviceUs: 14.6, HostUs: 15.123456789, MinUs: 14.1, MaxUs: 16.2,
				AlgBW: AlgBW(1024, 14.6), BusBW: BusBW(1024, 14.6, 4), Wrong: 0},
			{Impl: Impl, Algo: "auto/two-shot", DType: "float32", Op: "max", World: 4, Bytes: 1 << 28, Count: 1 << 26,
				TimeUs: 1234.5, DeviceUs: 1234.5, HostUs: 1240, MinUs: 1230, MaxUs: 1300,
				AlgBW: AlgBW(1<<28, 1234.5), BusBW: BusBW(1<<28, 1234.5, 4), Wrong: -1},
		},
	}
}

func TestJSONRoundTrip(t *testing.T) {
	rep := sampleReport()
	var b bytes.Buffer
	if err := WriteJSON(&b, rep); err != nil {
		t.Fatal(err)
	}
	got, err := ReadJSON(&b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, rep) {
		t.Errorf("round trip changed the report:\n got %+v\nwant %+v", got, rep)
	}
	// Producers may add fields; a foreign schema or a bad row is refused.
	if _, err := ReadJSON(strings.NewReader(`{"schema":"symmem-bench/1","extra":1,"rows":[]}`)); err != nil {
		t.Errorf("unknown field refused: %v", err)
	}
	for _, bad := range []string{
		`{"schema":"other/2","rows":[]}`,
		`{"schema":"symmem-bench/1","rows":[{"impl":"x","algo":"y","bytes":0}]}`,
		`{"schema":"symmem-bench/1","rows":[{"impl":"x","algo":"y","bytes":4,"time_us":-1}]}`,
		`{"schema":"symmem-bench/1","rows":[{"impl":"","algo":"y","bytes":4}]}`,
		`{"schema":"symmem-bench/1","rows":[{"impl":"x","algo":"y","bytes":4,"wrong":-2}]}`,
		`not json`,
	} {
		if _, err := ReadJSON(strings.NewReader(bad)); err == nil {
			t.Errorf("ReadJSON(%s): no error", bad)
		}
	}
}

func TestCSVRoundTrip(t *testing.T) {
	rows := sampleReport().Rows
	var b bytes.Buffer
	if err := WriteCSV(&b, rows); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(b.String(), "impl,algo,dtype,op,world,bytes,count,time_us,") {
		t.Errorf("unexpected header: %q", strings.SplitN(b.String(), "\n", 2)[0])
	}
	got, err := ReadCSV(bytes.NewReader(b.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, rows) {
		t.Errorf("round trip changed the rows:\n got %+v\nwant %+v", got, rows)
	}
	lines := strings.Split(b.String(), "\n")
	for name, in := range map[string]string{
		"empty":      "",
		"bad header": "a,b\n",
		"bad number": lines[0] + "\n" + strings.Replace(lines[1], "14.6", "fast", 1) + "\n",
		"short row":  lines[0] + "\nsymmem,one-shot\n",
	} {
		if _, err := ReadCSV(strings.NewReader(in)); err == nil {
			t.Errorf("ReadCSV(%s): no error", name)
		}
	}
}

func TestPlotWritesPNG(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "bench.png")
	ref := Report{Schema: Schema, Tool: "ref", World: 4, Rows: []Row{
		{Impl: "nccl", Algo: "ring", DType: "bfloat16", Op: "sum", Bytes: 1024, TimeUs: 51.7, BusBW: BusBW(1024, 51.7, 4)},
		{Impl: "nccl", Algo: "ring", DType: "bfloat16", Op: "sum", Bytes: 1 << 20, TimeUs: 51.3, BusBW: BusBW(1<<20, 51.3, 4)},
	}}
	if err := SavePlot(path, "", sampleReport(), ref); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 1000 || !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) {
		t.Fatalf("%s: %d bytes, not a PNG image", path, len(b))
	}
	var svg bytes.Buffer
	if err := WritePlot(&svg, "svg", "t", ref); err != nil || !strings.Contains(svg.String(), "<svg") {
		t.Errorf("svg plot: %v (%d bytes)", err, svg.Len())
	}
	if err := SavePlot(filepath.Join(dir, "x.bmp"), "", ref); err == nil {
		t.Error("unknown image format accepted")
	}
	empty := Report{Rows: []Row{{Impl: "x", Algo: "y", Bytes: 4}}}
	if err := SavePlot(filepath.Join(dir, "empty.png"), "", empty); err == nil {
		t.Error("a plot with nothing to draw succeeded")
	}
	if _, err := os.Stat(filepath.Join(dir, "empty.png")); !os.IsNotExist(err) {
		t.Error("a failed plot left its file behind")
	}
}

func TestTicks(t *testing.T) {
	ticks := sizeTicks(1024, 1<<20)
	var labels []string
	for _, tk := range ticks {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	if len(ticks) != 11 || strings.Join(labels, " ") != "1K 4K 16K 64K 256K 1M" {
		t.Errorf("size ticks: %d ticks, labels %v", len(ticks), labels)
	}
	labels = nil
	for _, tk := range valueTicks(3, 70) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	if strings.Join(labels, " ") != "5 10 20 50" {
		t.Errorf("value ticks over [3, 70]: labels %v", labels)
	}
	if sizeTicks(0, 10) != nil || valueTicks(-1, 10) != nil {
		t.Error("ticks over a non-positive range")
	}
}

func TestPlanValidateAndCases(t *testing.T) {
	p := Plan{
		Sizes: []uint64{1024, 4096}, DTypes: []device.DType{device.BFloat16, device.Float32},
		Ops: []device.ReduceOp{device.Sum}, Algos: []workload.Algo{workload.OneShot, workload.Auto},
		Warmup: 0, Iters: 1, Loops: 1,
	}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	cases := p.Cases()
	if len(cases) != 8 || cases[0] != (Case{1024, device.BFloat16, device.Sum, workload.OneShot}) ||
		cases[7] != (Case{4096, device.Float32, device.Sum, workload.Auto}) {
		t.Errorf("cases out of order: %v", cases)
	}
	if got := (Case{Bytes: 1 << 20, Algo: workload.Auto}).AlgoName(4); got != "auto/two-shot" {
		t.Errorf("auto at 1 MiB is named %q", got)
	}
	bad := p
	bad.Sizes = []uint64{6}
	bad.Iters, bad.Loops = 0, 0
	bad.Algos = nil
	err := bad.Validate()
	if err == nil {
		t.Fatal("bad plan accepted")
	}
	for _, want := range []string{"size 6", "iters 0", "loops 0", "no algorithms"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

func TestCountWrongFindsOneBadElement(t *testing.T) {
	const world, n = 3, 1000
	inputs := make([][]byte, world)
	for r := range inputs {
		var err error
		if inputs[r], err = Input(device.Float16, 9, r, 100, n); err != nil {
			t.Fatal(err)
		}
	}
	want, err := oracle.AllReduce(device.Float16, device.Avg, inputs)
	if err != nil {
		t.Fatal(err)
	}
	if w, err := CountWrong(device.Float16, device.Avg, world, 9, 100, want); err != nil || w != 0 {
		t.Fatalf("the reference itself has %d wrong elements (%v)", w, err)
	}
	want[2*17+1] ^= 0x40
	if w, err := CountWrong(device.Float16, device.Avg, world, 9, 100, want); err != nil || w != 1 {
		t.Errorf("one corrupted element counted as %d (%v)", w, err)
	}
	if _, err := CountWrong(device.Float16, device.Sum, world, 9, 0, []byte{1, 2, 3}); err == nil {
		t.Error("odd byte count accepted")
	}
}

func TestInputValues(t *testing.T) {
	vals, err := kernels.Decode(device.BFloat16, must(Input(device.BFloat16, 1, 0, 0, 4096)))
	if err != nil {
		t.Fatal(err)
	}
	zeros, distinct := 0, map[float32]bool{}
	for i, v := range vals {
		if v != Value(1, 0, uint64(i)) {
			t.Fatalf("element %d is %v in bf16, %v exactly: not representable", i, v, Value(1, 0, uint64(i)))
		}
		if v < -4 || v >= 4 {
			t.Fatalf("element %d = %v outside [-4, 4)", i, v)
		}
		if v == 0 {
			zeros++
		}
		distinct[v] = true
	}
	if zeros > 64 || len(distinct) < 200 {
		t.Errorf("inputs poorly spread: %d zeros, %d distinct values in 4096", zeros, len(distinct))
	}
	if Value(1, 0, 5) == Value(1, 1, 5) && Value(1, 0, 6) == Value(1, 1, 6) && Value(1, 0, 7) == Value(1, 1, 7) {
		t.Error("ranks get the same inputs")
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

func TestRunOnSimulator(t *testing.T) {
	p := Plan{
		Sizes: []uint64{1024, 4096}, DTypes: []device.DType{device.BFloat16, device.Float32},
		Ops: []device.ReduceOp{device.Sum, device.Max}, Algos: []workload.Algo{workload.OneShot, workload.TwoShot, workload.Auto},
		Warmup: 1, Iters: 2, Loops: 2, Seed: 3, Check: true,
	}
	var rows []Row
	res, err := simjob.Simulate(simjob.Config{World: 3, Seed: 5}, Program(p, func(r Row) { rows = append(rows, r) }))
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Err(); err != nil {
		t.Fatal(err)
	}
	cases := p.Cases()
	if len(rows) != len(cases) {
		t.Fatalf("%d rows for %d cases", len(rows), len(cases))
	}
	for i, r := range rows {
		c := cases[i]
		if r.Bytes != c.Bytes || r.Algo != c.AlgoName(3) || r.DType != c.DType.String() || r.Op != c.Op.String() || r.World != 3 {
			t.Errorf("row %d = %+v, want case %+v", i, r, c)
		}
		if r.Wrong != 0 {
			t.Errorf("row %d (%s %s %s %d B): %d wrong elements", i, r.Algo, r.DType, r.Op, r.Bytes, r.Wrong)
		}
		if !(r.HostUs > 0) || r.TimeUs != r.HostUs || r.MinUs > r.TimeUs || r.MaxUs < r.TimeUs {
			t.Errorf("row %d: simulator times inconsistent: %+v", i, r)
		}
		if math.Abs(r.BusBW-r.AlgBW*BusFactor(3)) > 1e-12 {
			t.Errorf("row %d: busbw %v is not algbw %v x 4/3", i, r.BusBW, r.AlgBW)
		}
	}
	var b bytes.Buffer
	if err := json.NewEncoder(&b).Encode(rows); err != nil {
		t.Fatal(err)
	}
}

func TestRunReportsWrongElements(t *testing.T) {
	// A device that flips one byte of every read shows up as wrong elements.
	p := Plan{Sizes: []uint64{1024}, DTypes: []device.DType{device.Float32}, Ops: []device.ReduceOp{device.Sum},
		Algos: []workload.Algo{workload.TwoShot}, Warmup: 0, Iters: 1, Loops: 1, Seed: 1, Check: true}
	var rows []Row
	res, err := simjob.Simulate(simjob.Config{World: 2, Seed: 1, WrapDevice: func(_ int, d device.Device) device.Device {
		return flipRead{d}
	}}, Program(p, func(r Row) { rows = append(rows, r) }))
	if err != nil || res.Err() != nil {
		t.Fatal(err, res.Err())
	}
	if len(rows) != 1 || rows[0].Wrong != 2 {
		t.Fatalf("rows %+v: want one row with 2 wrong elements (one per rank)", rows)
	}
}

// flipRead corrupts the first byte of every read.
type flipRead struct{ device.Device }

func (f flipRead) Read(s device.Stream, dst []byte, src device.Ptr) error {
	err := f.Device.Read(s, dst, src)
	if len(dst) > 0 {
		dst[0] ^= 1
	}
	return err
}

func TestRunRejectsBadPlan(t *testing.T) {
	res, err := simjob.Simulate(simjob.Config{World: 2, Seed: 1}, Program(Plan{}, nil))
	if err != nil {
		t.Fatal(err)
	}
	if e := res.Err(); e == nil || !strings.Contains(e.Error(), "bench plan") {
		t.Fatalf("empty plan: %v", e)
	}
}

// TestPlotOfMixedWorlds: a plot of reports of worlds 2 and 4 is titled with
// both, its curves name their world, and "+graph" survives in the labels
// (auto's choices included).
func TestPlotOfMixedWorlds(t *testing.T) {
	row := func(world int, algo string, bytes uint64) Row {
		return Row{Impl: "symmem", Algo: algo, DType: "bfloat16", Op: "sum", World: world, Bytes: bytes, TimeUs: 10, BusBW: 1}
	}
	two := Report{World: 2, Rows: []Row{row(2, "auto/one-shot+graph", 1024), row(2, "auto/two-shot+graph", 1<<20), row(2, "one-shot", 1024)}}
	four := Report{World: 4, Rows: []Row{row(4, "auto/one-shot+graph", 1024), row(4, "one-shot", 1024)}}
	var names []string
	for _, s := range seriesOf(append(two.Rows, four.Rows...)) {
		names = append(names, s.name)
	}
	want := []string{"symmem auto+graph world 2", "symmem one-shot world 2", "symmem auto+graph world 4", "symmem one-shot world 4"}
	if !slices.Equal(names, want) {
		t.Errorf("series %q, want %q", names, want)
	}
	if got := seriesOf(two.Rows)[0].name; got != "symmem auto+graph" {
		t.Errorf("one world's series %q, want no world in it", got)
	}
	var svg bytes.Buffer
	if err := WritePlot(&svg, "svg", "", two, four); err != nil {
		t.Fatal(err)
	}
	for _, w := range append(want, "all-reduce, worlds 2 and 4") {
		if !strings.Contains(svg.String(), w) {
			t.Errorf("svg lacks %q", w)
		}
	}
	// One point: both log axes span a single value.
	if err := WritePlot(&svg, "svg", "", Report{Rows: []Row{row(2, "one-shot", 1024)}}); err != nil {
		t.Errorf("plot of one point: %v", err)
	}
	if got := worldsOf([]Report{two}); got != ", world 2" {
		t.Errorf("worldsOf(world 2) = %q", got)
	}
	if got := worldsOf([]Report{{World: 8}, two, four}); got != ", worlds 2, 4 and 8" {
		t.Errorf("worldsOf(8, 2, 4) = %q", got)
	}
}
