package bench

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
)

// Schema names the JSON layout of [Report]; the reference scripts write
// the same.
const Schema = "symmem-bench/1"

// Timers: which clock a report's time_us (and bandwidths) come from.
const (
	// TimerDevice: device events recorded on the rank's stream around a
	// host loop of calls, divided by the calls.
	TimerDevice = "device"
	// TimerHost: the host's wall clock around the same loop.
	TimerHost = "host"
)

// Row is one measured case of one implementation.
type Row struct {
	Impl  string `json:"impl"`  // "symmem", "torch-symm", "nccl"
	Algo  string `json:"algo"`  // "one-shot", "two-shot", "auto/two-shot", "ring", ...
	DType string `json:"dtype"` // "bfloat16", "float32", "float16"
	Op    string `json:"op"`    // "sum", "avg", "max", "min"
	World int    `json:"world"`
	Bytes uint64 `json:"bytes"`
	Count uint64 `json:"count"` // elements
	// TimeUs is the per-call time in microseconds from the report's timer
	// (the median over timed loops, averaged over ranks); AlgBW and BusBW
	// derive from it.
	TimeUs   float64 `json:"time_us"`
	DeviceUs float64 `json:"device_us"` // per call, device events (0: no device clock)
	HostUs   float64 `json:"host_us"`   // per call, host wall clock
	MinUs    float64 `json:"min_us"`    // fastest timed loop, per call
	MaxUs    float64 `json:"max_us"`    // slowest timed loop, per call
	AlgBW    float64 `json:"algbw_gbps"`
	BusBW    float64 `json:"busbw_gbps"`
	// Wrong counts the elements that differ from the reference, summed over
	// ranks; -1 when the case was not checked.
	Wrong int64 `json:"wrong"`
}

// Series names the curve a row belongs to: implementation and algorithm
// (with its "+graph" suffix), with the world size, dtype and op appended
// when asked. Auto's choices form one curve.
func (r Row) Series(withWorld, withDType, withOp bool) string {
	algo, graph := strings.CutSuffix(r.Algo, "+graph")
	if strings.HasPrefix(algo, "auto/") {
		algo = "auto" // one curve, whatever auto picked at each size
	}
	if graph {
		algo += "+graph"
	}
	s := r.Impl + " " + algo
	if withWorld {
		s += " world " + strconv.Itoa(r.World)
	}
	if withDType {
		s += " " + r.DType
	}
	if withOp {
		s += " " + r.Op
	}
	return s
}

// Report is a benchmark's outcome: how it was run and its rows.
type Report struct {
	Schema     string `json:"schema"`
	Tool       string `json:"tool"`   // what produced it
	Device     string `json:"device"` // "sim" or "cuda"
	DeviceName string `json:"device_name,omitempty"`
	World      int    `json:"world"`
	Timer      string `json:"timer"` // TimerDevice or TimerHost
	Simulated  bool   `json:"simulated"`
	Warmup     int    `json:"warmup"`
	Iters      int    `json:"iters"`
	Loops      int    `json:"loops"`
	Note       string `json:"note,omitempty"`
	Rows       []Row  `json:"rows"`
}

// WriteJSON writes rep as indented JSON.
func WriteJSON(w io.Writer, rep Report) error {
	if rep.Schema == "" {
		rep.Schema = Schema
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(rep); err != nil {
		return fmt.Errorf("write json: %w", err)
	}
	return nil
}

// ReadJSON reads a report and checks its schema and rows. Fields it does
// not know are ignored, so producers may add their own.
func ReadJSON(r io.Reader) (Report, error) {
	var rep Report
	if err := json.NewDecoder(r).Decode(&rep); err != nil {
		return Report{}, fmt.Errorf("read json: %w", err)
	}
	if rep.Schema != Schema {
		return Report{}, fmt.Errorf("read json: schema %q, want %q", rep.Schema, Schema)
	}
	for i, row := range rep.Rows {
		if err := row.check(); err != nil {
			return Report{}, fmt.Errorf("read json: row %d: %w", i, err)
		}
	}
	return rep, nil
}

// ReadJSONFile reads a report from a file.
func ReadJSONFile(path string) (Report, error) {
	f, err := os.Open(path)
	if err != nil {
		return Report{}, err
	}
	defer f.Close()
	rep, err := ReadJSON(f)
	if err != nil {
		return Report{}, fmt.Errorf("%s: %w", path, err)
	}
	return rep, nil
}

// check rejects rows no benchmark can produce.
func (r Row) check() error {
	if r.Impl == "" || r.Algo == "" {
		return errors.New("impl and algo must be set")
	}
	if r.Bytes == 0 {
		return errors.New("bytes must be positive")
	}
	for _, v := range []struct {
		name string
		x    float64
	}{{"time_us", r.TimeUs}, {"device_us", r.DeviceUs}, {"host_us", r.HostUs}, {"min_us", r.MinUs},
		{"max_us", r.MaxUs}, {"algbw_gbps", r.AlgBW}, {"busbw_gbps", r.BusBW}} {
		if v.x < 0 || math.IsNaN(v.x) || math.IsInf(v.x, 0) {
			return fmt.Errorf("%s of %d bytes is %v, want a finite non-negative number", v.name, r.Bytes, v.x)
		}
	}
	if r.Wrong < -1 {
		return fmt.Errorf("wrong is %d, want -1 (unchecked) or a count", r.Wrong)
	}
	return nil
}

// csvHeader is the column order of WriteCSV.
var csvHeader = []string{
	"impl", "algo", "dtype", "op", "world", "bytes", "count",
	"time_us", "device_us", "host_us", "min_us", "max_us", "algbw_gbps", "busbw_gbps", "wrong",
}

// WriteCSV writes rows with a header line.
func WriteCSV(w io.Writer, rows []Row) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(csvHeader); err != nil {
		return fmt.Errorf("write csv: %w", err)
	}
	f := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	for _, r := range rows {
		rec := []string{
			r.Impl, r.Algo, r.DType, r.Op, strconv.Itoa(r.World),
			strconv.FormatUint(r.Bytes, 10), strconv.FormatUint(r.Count, 10),
			f(r.TimeUs), f(r.DeviceUs), f(r.HostUs), f(r.MinUs), f(r.MaxUs), f(r.AlgBW), f(r.BusBW),
			strconv.FormatInt(r.Wrong, 10),
		}
		if err := cw.Write(rec); err != nil {
			return fmt.Errorf("write csv: %w", err)
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("write csv: %w", err)
	}
	return nil
}

// ReadCSV reads rows written by WriteCSV.
func ReadCSV(r io.Reader) ([]Row, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = len(csvHeader)
	recs, err := cr.ReadAll()
	if err != nil {
		return nil, fmt.Errorf("read csv: %w", err)
	}
	if len(recs) == 0 {
		return nil, errors.New("read csv: empty input, want a header line")
	}
	if got := strings.Join(recs[0], ","); got != strings.Join(csvHeader, ",") {
		return nil, fmt.Errorf("read csv: header %q, want %q", got, strings.Join(csvHeader, ","))
	}
	rows := make([]Row, 0, len(recs)-1)
	for i, rec := range recs[1:] {
		row, err := parseCSVRow(rec)
		if err != nil {
			return nil, fmt.Errorf("read csv: line %d: %w", i+2, err)
		}
		rows = append(rows, row)
	}
	return rows, nil
}

func parseCSVRow(rec []string) (Row, error) {
	var errs []error
	num := func(col int) float64 {
		v, err := strconv.ParseFloat(rec[col], 64)
		if err != nil {
			errs = append(errs, fmt.Errorf("column %s: %q is not a number", csvHeader[col], rec[col]))
		}
		return v
	}
	uint := func(col int) uint64 {
		v, err := strconv.ParseUint(rec[col], 10, 64)
		if err != nil {
			errs = append(errs, fmt.Errorf("column %s: %q is not a count", csvHeader[col], rec[col]))
		}
		return v
	}
	row := Row{Impl: rec[0], Algo: rec[1], DType: rec[2], Op: rec[3]}
	world, err := strconv.Atoi(rec[4])
	if err != nil {
		errs = append(errs, fmt.Errorf("column world: %q is not a count", rec[4]))
	}
	row.World = world
	row.Bytes, row.Count = uint(5), uint(6)
	row.TimeUs, row.DeviceUs, row.HostUs = num(7), num(8), num(9)
	row.MinUs, row.MaxUs, row.AlgBW, row.BusBW = num(10), num(11), num(12), num(13)
	row.Wrong, err = strconv.ParseInt(rec[14], 10, 64)
	if err != nil {
		errs = append(errs, fmt.Errorf("column wrong: %q is not an integer", rec[14]))
	}
	if err := errors.Join(errs...); err != nil {
		return Row{}, err
	}
	if err := row.check(); err != nil {
		return Row{}, err
	}
	return row, nil
}
