package campaign

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
)

// A report file holds JSON lines: a [Header] first, then one [Finding]
// per distinct finding of the shard, then a closing [Summary]. Each line's
// "record" field says which it is.
const (
	RecordHeader  = "shard"
	RecordFinding = "finding"
	RecordSummary = "summary"
)

// Header is a report's first line: which shard of which campaign it is,
// and where the shard came from.
type Header struct {
	Record  string `json:"record"`  // RecordHeader
	Command string `json:"command"` // fuzz, check, litmus
	Shard   Shard  `json:"shard"`
	Seeds   Range  `json:"seeds"` // the shard's seeds
}

// Finding is one distinct finding of a shard.
type Finding struct {
	Record string `json:"record"` // RecordFinding
	// Signature identifies the finding across seeds and shards: its kind
	// and its sites, as the command's own report tells findings apart.
	Signature string `json:"signature"`
	Kind      string `json:"kind"`
	Title     string `json:"title"` // one line
	// Order places where one process would have found it first: the
	// report keeps, of the findings with one signature, the one whose
	// Order is least (compared element by element) and lists findings in
	// that order. For a fuzz failure it is its lowest seed.
	Order []uint64 `json:"order"`
	Seed  uint64   `json:"seed"`  // the seed that found it first
	World int      `json:"world"` // its world size, where the command has several (0: none)
	Count int      `json:"count"` // the cases or runs that found it
	// Lines are the lines the command prints under the finding's title:
	// faults, details, the replay command (which names no shard), and its
	// shrunk form when one was made.
	Lines []string `json:"lines"`
	// Shrunk are the lines of its shrunk form, where the command prints
	// those after every finding (symmem check), without their number.
	Shrunk []string `json:"shrunk,omitempty"`
}

// Build identifies the program that wrote a report.
type Build struct {
	Version  string `json:"version"`
	Revision string `json:"revision"` // vcs.revision; "unknown" without one
	Modified bool   `json:"modified"` // vcs.modified
	Go       string `json:"go"`
}

// BuildOf is the build of info (from debug.ReadBuildInfo; nil when there
// is none), with linked, when not empty, as its version.
func BuildOf(linked string, info *debug.BuildInfo) Build {
	b := Build{Version: linked, Revision: "unknown"}
	if info == nil {
		if b.Version == "" {
			b.Version = "unknown"
		}
		return b
	}
	if b.Version == "" {
		b.Version = info.Main.Version
	}
	b.Go = info.GoVersion
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		}
	}
	return b
}

// String is "VERSION REVISION[+modified] GO".
func (b Build) String() string {
	s := b.Version + " " + b.Revision
	if b.Modified {
		s += "+modified"
	}
	if b.Go != "" {
		s += " " + b.Go
	}
	return s
}

// Summary is a report's last line.
type Summary struct {
	Record  string `json:"record"` // RecordSummary
	Command string `json:"command"`
	Build   Build  `json:"build"`
	// Flags are the command's arguments and flags that decide what it
	// runs and reports (every one, set or default; not the shard, the
	// report file or the number of workers): shards of one campaign have
	// the same.
	Flags    []string `json:"flags"`
	Shard    Shard    `json:"shard"`
	Campaign Range    `json:"campaign"` // the seeds of the whole campaign
	Seeds    Range    `json:"seeds"`    // the shard's
	// Counts are summed over shards (cases, failures, steps, ...).
	Counts map[string]int64 `json:"counts"`
	// Sets are joined over shards: a merged report counts their distinct
	// elements (trace hashes, outcomes reached).
	Sets map[string][]string `json:"sets,omitempty"`
	// Durations (seconds) of the shard's phases: a merged report gives
	// the longest, which is the campaign's when shards run side by side.
	Durations map[string]float64 `json:"durations,omitempty"`
	// Fixed are lines that do not depend on the seeds (a litmus test's
	// exact outcomes): every shard computes the same, and a merge takes
	// them from any.
	Fixed    map[string][]string `json:"fixed,omitempty"`
	Findings int                 `json:"findings"` // finding lines before this one
	// WallSeconds and CPUSeconds are the process's, from its start to the
	// report (CPU: user and system).
	WallSeconds float64 `json:"wall_seconds"`
	CPUSeconds  float64 `json:"cpu_seconds"`
	// Interrupted says a signal stopped the shard before it ran all its
	// seeds; Error is why the shard failed to run some seed. Either makes
	// the campaign fail.
	Interrupted bool   `json:"interrupted"`
	Error       string `json:"error,omitempty"`
}

// Report is a report file, read back.
type Report struct {
	Path     string
	Header   Header
	Findings []Finding
	Summary  Summary
}

// Writer writes a report under a temporary name in the report's folder and
// renames it to its name when closed, so that a shard that is killed or
// retried never leaves a partial report under that name.
type Writer struct {
	path string
	tmp  *os.File
	buf  *bufio.Writer
	n    int
	err  error
}

// Create starts the report path with its header.
func Create(path string, h Header) (*Writer, error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".*.tmp")
	if err != nil {
		return nil, fmt.Errorf("--report %s: %w", path, err)
	}
	w := &Writer{path: path, tmp: f, buf: bufio.NewWriter(f)}
	h.Record = RecordHeader
	w.line(h)
	if w.err != nil {
		w.Abort()
		return nil, w.err
	}
	return w, nil
}

func (w *Writer) line(v any) {
	if w.err != nil {
		return
	}
	b, err := json.Marshal(v)
	if err == nil {
		b = append(b, '\n')
		_, err = w.buf.Write(b)
	}
	if err != nil {
		w.err = fmt.Errorf("--report %s: %w", w.path, err)
	}
}

// Finding writes a finding.
func (w *Writer) Finding(f Finding) {
	f.Record = RecordFinding
	w.n++
	w.line(f)
}

// Close writes the summary, syncs the file and renames it to the report's
// name. On error the temporary file is removed.
func (w *Writer) Close(s Summary) error {
	s.Record, s.Findings = RecordSummary, w.n
	for _, v := range s.Sets {
		slices.Sort(v)
	}
	w.line(s)
	if w.err == nil {
		// CreateTemp makes the file private; a report is for others to merge.
		if err := w.tmp.Chmod(0o644); err != nil {
			w.err = err
		} else if err := w.buf.Flush(); err != nil {
			w.err = err
		} else if err := w.tmp.Sync(); err != nil {
			w.err = err
		}
	}
	if err := w.tmp.Close(); err != nil && w.err == nil {
		w.err = err
	}
	if w.err == nil {
		if err := os.Rename(w.tmp.Name(), w.path); err != nil {
			w.err = err
		}
	}
	if w.err != nil {
		os.Remove(w.tmp.Name())
		return fmt.Errorf("--report %s: %w", w.path, w.err)
	}
	return nil
}

// Abort drops the report: the temporary file is removed.
func (w *Writer) Abort() {
	w.tmp.Close()
	os.Remove(w.tmp.Name())
}

// Read reads a report file back. It refuses a file that is not a whole
// report: no header first, no summary last, a line that is not a record,
// or fewer or more findings than the summary counts.
func Read(path string) (*Report, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	r, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	r.Path = path
	return r, nil
}

// Parse reads a report from its bytes.
func Parse(data []byte) (*Report, error) {
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(lines) < 2 || len(lines[0]) == 0 {
		return nil, errors.New("not a report: want a header line and a summary line at least")
	}
	r := &Report{}
	for i, l := range lines {
		var kind struct {
			Record string `json:"record"`
		}
		if err := json.Unmarshal(l, &kind); err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		want := RecordFinding
		switch i {
		case 0:
			want = RecordHeader
		case len(lines) - 1:
			want = RecordSummary
		}
		if kind.Record != want {
			return nil, fmt.Errorf("line %d: a %q record where a %q record belongs (a report is a header, findings, a summary)", i+1, kind.Record, want)
		}
		var err error
		switch want {
		case RecordHeader:
			err = strict(l, &r.Header)
		case RecordSummary:
			err = strict(l, &r.Summary)
		default:
			var f Finding
			err = strict(l, &f)
			r.Findings = append(r.Findings, f)
		}
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
	}
	s, h := r.Summary, r.Header
	if s.Findings != len(r.Findings) {
		return nil, fmt.Errorf("the summary counts %d findings, the report has %d", s.Findings, len(r.Findings))
	}
	if h.Command != s.Command || h.Shard.Index != s.Shard.Index || h.Shard.Count != s.Shard.Count || h.Seeds != s.Seeds {
		return nil, fmt.Errorf("the header (%s shard %s, seeds %s) and the summary (%s shard %s, seeds %s) disagree",
			h.Command, h.Shard, h.Seeds, s.Command, s.Shard, s.Seeds)
	}
	if s.Shard.Count < 1 || s.Shard.Index < 0 || s.Shard.Index >= s.Shard.Count {
		return nil, fmt.Errorf("shard %s out of range", s.Shard)
	}
	if want := s.Shard.Range(s.Campaign); want != s.Seeds {
		return nil, fmt.Errorf("shard %s of seeds %s should run seeds %s, not %s", s.Shard, s.Campaign, want, s.Seeds)
	}
	for i, f := range r.Findings {
		if f.Signature == "" || f.Count < 1 || len(f.Order) == 0 {
			return nil, fmt.Errorf("finding %d: want a signature, an order and a count of at least 1", i+1)
		}
	}
	return r, nil
}

// strict decodes one JSON line, refusing unknown fields.
func strict(line []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(line))
	d.DisallowUnknownFields()
	return d.Decode(v)
}

// sortFindings orders findings as one process finds them.
func sortFindings(fs []Finding) {
	slices.SortStableFunc(fs, func(a, b Finding) int { return slices.Compare(a.Order, b.Order) })
}
