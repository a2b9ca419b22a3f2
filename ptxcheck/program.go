package ptxcheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/symmem/symmem/device/sim"
	"github.com/symmem/symmem/internal/jsonfile"
)

// Program is what every rank does: the buffers it allocates and the steps
// it runs, in order. A harness file is a Program in JSON (docs/check.md
// documents its schema with an example).
type Program struct {
	// PTX is the PTX file, relative to the harness file's folder.
	PTX string `json:"ptx"`
	// Worlds are the world sizes to run, "2-8" or "2,4,8" (default "2").
	Worlds string `json:"worlds,omitempty"`
	// Vars are named expressions of world, usable in every expression.
	Vars map[string]Expr `json:"vars,omitempty"`
	// Timeout is how long (virtual time) a thread may spin on unchanged
	// bytes before the run counts as a hang (default 10s).
	Timeout string `json:"timeout,omitempty"`
	// Occupancy is the device the launches' blocks must fit on (nil:
	// an H200, 132 SMs). See [Occupancy].
	Occupancy *Occupancy `json:"occupancy,omitempty"`
	Buffers   []Buffer   `json:"buffers"`
	Steps     []Step     `json:"steps"`
	// Note is free text for the reader, ignored (as is the "note" of a
	// buffer, a launch or a parameter).
	Note string `json:"note,omitempty"`
}

// Occupancy is the device every launch's blocks must fit on: its
// multiprocessor count and what each holds, or directly how many blocks
// of a launch may be resident at once. A launch runs that many blocks at
// once; the others start, in block order, as resident blocks exit, and
// resident blocks that spin on blocks that never start are a hang that
// names the occupancy. A zero field takes the H200's value (132 SMs of
// 2048 threads, 32 blocks, 65536 registers and 228 KiB of shared memory,
// 227 KiB a block, 1 KiB reserved a block); resident_blocks alone bounds
// the resident blocks by itself, without multiprocessors.
type Occupancy struct {
	SMs            int `json:"sms,omitempty"`
	ThreadsPerSM   int `json:"threads_per_sm,omitempty"`
	BlocksPerSM    int `json:"blocks_per_sm,omitempty"`
	RegistersPerSM int `json:"registers_per_sm,omitempty"`
	SharedPerSM    int `json:"shared_per_sm,omitempty"`
	SharedPerBlock int `json:"shared_per_block,omitempty"`
	ReservedShared int `json:"reserved_shared,omitempty"`
	// Registers is the registers a thread of every launched entry has, as
	// ptxas -v reports them (default: the entry's .maxnreg, else 32,
	// which never bounds the resident blocks).
	Registers      int    `json:"registers,omitempty"`
	ResidentBlocks int    `json:"resident_blocks,omitempty"`
	Note           string `json:"note,omitempty"`
}

// device is the simulator's occupancy of o (nil: the H200's).
func (o *Occupancy) device() *sim.Occupancy {
	if o == nil {
		return &sim.Occupancy{SMs: sim.H200SMs}
	}
	d := &sim.Occupancy{SMs: o.SMs, ThreadsPerSM: o.ThreadsPerSM, BlocksPerSM: o.BlocksPerSM, RegistersPerSM: o.RegistersPerSM,
		SharedPerSM: o.SharedPerSM, SharedPerBlock: o.SharedPerBlock, ReservedShared: o.ReservedShared, Registers: o.Registers,
		ResidentBlocks: o.ResidentBlocks}
	if d.SMs == 0 && d.ResidentBlocks == 0 {
		d.SMs = sim.H200SMs
	}
	return d
}

// Buffer is a device allocation every rank makes, of the same size.
type Buffer struct {
	Name string `json:"name"`
	// Kind is "symmetric" (mapped by every rank: its pointer table is
	// available), "signal" (symmetric, zeroed), "plain" (this rank's
	// only) or "table" (this rank's only, holding the entries of Table).
	Kind  string `json:"kind"`
	Bytes Expr   `json:"bytes,omitempty"`
	// Init, when set, is written before the ranks meet; otherwise the
	// buffer holds garbage (but a signal buffer, zeroed), as fresh device
	// memory does.
	Init *Fill  `json:"init,omitempty"`
	Note string `json:"note,omitempty"`
	// Table gives a table buffer's contents (and its size, which Bytes
	// must then leave out).
	Table *Table `json:"table,omitempty"`
}

// Table is a device array of structs that the host fills once the ranks
// have met, such as an array of channel handles that hold peers'
// addresses: Count entries, entry i packed from the fields of Entry (as a
// by-value struct parameter is) with i in their expressions.
type Table struct {
	Count Expr    `json:"count"`
	Entry []Param `json:"entry"`
	Note  string  `json:"note,omitempty"` // free text for the reader, ignored
}

// Fill gives a buffer's elements: Value for each element i from Offset
// (bytes) for Count elements (default: up to the end of the buffer).
type Fill struct {
	DType  string `json:"dtype"`
	Value  Expr   `json:"value"`
	Offset Expr   `json:"offset,omitempty"`
	Count  Expr   `json:"count,omitempty"`
	Note   string `json:"note,omitempty"` // free text for the reader, ignored
}

// Step is one thing a rank does; exactly one field is set, besides When.
type Step struct {
	// When, if given, selects the step per rank: the rank runs it only
	// where the expression (of rank, world, iter and the vars) is not 0,
	// as in "rank == 0". Without it every rank runs the step.
	When Expr `json:"when,omitempty"`
	// Write writes host values into a buffer, after the earlier work of
	// its stream (0 by default), and returns once written.
	Write *Write `json:"write,omitempty"`
	// Memset enqueues a byte fill of a buffer on a stream, as
	// cudaMemsetAsync does: ordered with that stream's work only.
	Memset *Memset `json:"memset,omitempty"`
	// Graph captures launches and memsets into a graph and replays it.
	Graph *Graph `json:"graph,omitempty"`
	// Wait waits on the host for the earlier work of the streams it
	// names and reports the errors of their kernels.
	Wait *Wait `json:"wait,omitempty"`
	// Launch enqueues a kernel launch.
	Launch *Launch `json:"launch,omitempty"`
	// Sync waits for every stream the rank used and reports the errors
	// of their kernels.
	Sync bool `json:"sync,omitempty"`
	// Barrier waits until every rank reached it (on the host, through
	// the Store).
	Barrier bool `json:"barrier,omitempty"`
	// Check reads a buffer after the earlier work of stream 0 and
	// compares it with the expected values.
	Check *Check `json:"check,omitempty"`
	// Repeat runs its steps Times times, with iter = 0, 1, ...
	Repeat *Repeat `json:"repeat,omitempty"`
	Note   string  `json:"note,omitempty"` // free text for the reader, ignored
}

// Write is a Step's host write into Buffer, on stream Stream (0: the
// rank's own).
type Write struct {
	Buffer string `json:"buffer"`
	Stream int    `json:"stream,omitempty"`
	Fill          // its Note is the write's
}

// Memset sets Bytes bytes (default: to the end) of Buffer from Offset to
// Value (a byte, default 0), enqueued on stream Stream and ordered with
// nothing else: not with the rank's other streams, not with any peer. With
// Rank, it sets rank Rank's copy of a symmetric or signal buffer through
// this rank's mapping.
type Memset struct {
	Buffer string `json:"buffer"`
	Value  Expr   `json:"value,omitempty"`
	Offset Expr   `json:"offset,omitempty"`
	Bytes  Expr   `json:"bytes,omitempty"`
	Rank   Expr   `json:"rank,omitempty"`
	Stream int    `json:"stream,omitempty"`
	Note   string `json:"note,omitempty"` // free text for the reader, ignored
}

// Graph captures Steps (launches and memsets, each with an optional When)
// on stream Stream into a graph and enqueues it Replays times on that
// stream (default 1). Every expression of the captured steps is evaluated
// once, at capture: a parameter of iter keeps the capture's value in
// every replay, as CUDA graph capture freezes kernel parameters.
type Graph struct {
	Stream  int    `json:"stream,omitempty"`
	Replays Expr   `json:"replays,omitempty"`
	Steps   []Step `json:"steps"`
	Note    string `json:"note,omitempty"` // free text for the reader, ignored
}

// Wait names the streams whose earlier work the host waits for.
type Wait struct {
	Streams []int  `json:"streams"`
	Note    string `json:"note,omitempty"` // free text for the reader, ignored
}

// Launch is a kernel launch: Entry with Grid blocks of Block threads on
// stream Stream (0: the rank's own; others are created on first use),
// each block with Shared bytes of dynamic shared memory (none when
// empty).
type Launch struct {
	Entry  string  `json:"entry"`
	Grid   Expr    `json:"grid"`
	Block  Expr    `json:"block"`
	Shared Expr    `json:"shared,omitempty"`
	Stream int     `json:"stream,omitempty"`
	Params []Param `json:"params"`
	Note   string  `json:"note,omitempty"`
}

// Check compares Count elements of Buffer from Offset with Value. A float
// element passes when |got - want| <= Tolerance x max(1, |want|) (NaN
// wants NaN); integers must be equal.
type Check struct {
	Buffer string `json:"buffer"`
	Fill
	Tolerance float64 `json:"tolerance,omitempty"` // Fill's Note is the check's
}

// Repeat runs Steps Times times.
type Repeat struct {
	Times Expr   `json:"times"`
	Steps []Step `json:"steps"`
	Note  string `json:"note,omitempty"` // free text for the reader, ignored
}

// Param is one value of a launch's parameter block, written as a JSON
// object with one key naming its form:
//
//	{"u32": "rank"}           a scalar: u8 u16 u32 u64 s8 s16 s32 s64 f32 f64
//	{"ptr": "buf"}            this rank's address of buf; with "rank": R, rank
//	                          R's buf as mapped here; with "offset": bytes further
//	{"ptrs": "buf"}           the address of a device array of every rank's
//	                          address of buf (symmetric buffers)
//	{"ptrarray": "buf", "len": 8}
//	                          the same addresses by value, len of them (the
//	                          rest zero): an array-of-pointers struct
//	{"struct": [P, ...]}      a by-value struct of the values P, each at its
//	                          natural alignment
//
// and optionally "note": free text for the reader, ignored.
//
// A parameter must have the size its declaration gives (a struct or
// pointer array at most that size: the rest is zero).
type Param struct {
	Form   string // u32, ptr, ptrs, ptrarray, struct, ...
	Value  Expr   // scalars
	Buffer string // ptr, ptrs, ptrarray
	Rank   Expr   // ptr: whose mapping ("" this rank's)
	Offset Expr   // ptr: bytes into the buffer
	Len    int    // ptrarray
	Fields []Param
}

var scalarForms = map[string]int{"u8": 1, "u16": 2, "u32": 4, "u64": 8, "s8": 1, "s16": 2, "s32": 4, "s64": 8, "f32": 4, "f64": 8}

// UnmarshalJSON reads the one-key form of a Param.
func (p *Param) UnmarshalJSON(b []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("parameter %s: want an object such as {\"u32\": \"rank\"}", b)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var form []string
	for _, k := range keys {
		if _, ok := scalarForms[k]; ok || k == "ptr" || k == "ptrs" || k == "ptrarray" || k == "struct" {
			form = append(form, k)
		} else if k != "rank" && k != "offset" && k != "len" && k != "note" {
			return fmt.Errorf("parameter %s: unknown key %q", b, k)
		}
	}
	if len(form) != 1 {
		return fmt.Errorf("parameter %s: want exactly one of u8..u64, s8..s64, f32, f64, ptr, ptrs, ptrarray, struct", b)
	}
	p.Form = form[0]
	raw := m[p.Form]
	var err error
	switch p.Form {
	case "struct":
		err = json.Unmarshal(raw, &p.Fields)
	case "ptr", "ptrs", "ptrarray":
		err = json.Unmarshal(raw, &p.Buffer)
	default:
		err = json.Unmarshal(raw, &p.Value)
	}
	if err != nil {
		return fmt.Errorf("parameter %s: %w", b, err)
	}
	for k, dst := range map[string]*Expr{"rank": &p.Rank, "offset": &p.Offset} {
		if r, ok := m[k]; ok {
			if err := json.Unmarshal(r, dst); err != nil {
				return fmt.Errorf("parameter %s: %s: %w", b, k, err)
			}
		}
	}
	if r, ok := m["len"]; ok {
		if err := json.Unmarshal(r, &p.Len); err != nil {
			return fmt.Errorf("parameter %s: len: %w", b, err)
		}
	}
	return nil
}

// Expr is an expression (see docs/check.md): arithmetic on numbers over
// rank, world, i, iter and the program's vars, with sum_ranks, sum, min,
// max, floor and sqrt; written in JSON as a string or a number.
type Expr string

// UnmarshalJSON accepts a string or a number.
func (e *Expr) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*e = Expr(s)
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("want a number or an expression string, got %s", b)
	}
	*e = Expr(n.String())
	return nil
}

// LoadHarness reads a harness file: a Program in JSON, unknown fields
// refused, and a string value still starting with "TODO" (a skeleton's
// marker, see [Skeleton]) refused by its place. Its PTX path is made
// relative to the working directory.
func LoadHarness(path string) (*Program, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("harness: %w", err)
	}
	p, err := ParseHarness(b)
	if err != nil {
		return nil, fmt.Errorf("harness %s: %w", path, err)
	}
	if p.PTX != "" && !filepath.IsAbs(p.PTX) {
		p.PTX = filepath.Join(filepath.Dir(path), p.PTX)
	}
	return p, nil
}

// ParseHarness decodes a harness's JSON text as [LoadHarness] does,
// leaving its PTX path as it is.
func ParseHarness(b []byte) (*Program, error) {
	var p Program
	if err := jsonfile.Decode(b, &p, true); err != nil {
		return nil, err
	}
	if left := todos(b); len(left) > 0 {
		return nil, fmt.Errorf("TODOs left to fill (%d):\n  %s", len(left), strings.Join(left, "\n  "))
	}
	return &p, nil
}

// todos lists the string values of the JSON text b that start with
// "TODO", each as its path and value (`steps[1].launch.grid: "TODO:
// blocks"`), in the order of the text. b is valid JSON.
func todos(b []byte) []string {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var out []string
	// path holds one element per open object or array: the key or the
	// index of the value being read.
	type level struct {
		array bool
		key   string
		index int
	}
	var path []level
	at := func() string {
		var s strings.Builder
		for _, l := range path {
			if l.array {
				fmt.Fprintf(&s, "[%d]", l.index)
			} else {
				if s.Len() > 0 {
					s.WriteByte('.')
				}
				s.WriteString(l.key)
			}
		}
		return s.String()
	}
	expectKey := false
	// value notes that a value ended at the current level.
	value := func() {
		if n := len(path); n > 0 {
			if path[n-1].array {
				path[n-1].index++
			} else {
				expectKey = true
			}
		}
	}
	for {
		tok, err := dec.Token()
		if err != nil {
			return out
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{':
				path = append(path, level{})
				expectKey = true
			case '[':
				path = append(path, level{array: true})
				expectKey = false
			default:
				path = path[:len(path)-1]
				value()
			}
		case string:
			if expectKey {
				path[len(path)-1].key = t
				expectKey = false
				continue
			}
			if strings.HasPrefix(t, "TODO") {
				out = append(out, fmt.Sprintf("%s: %q", at(), t))
			}
			value()
		default:
			value()
		}
	}
}

// ParseWorlds parses "2-8" or "2,4,8".
func ParseWorlds(s string) ([]int, error) {
	if s == "" {
		return []int{2}, nil
	}
	var out []int
	if lo, hi, ok := strings.Cut(s, "-"); ok {
		a, err1 := strconv.Atoi(strings.TrimSpace(lo))
		b, err2 := strconv.Atoi(strings.TrimSpace(hi))
		if err1 != nil || err2 != nil || a > b {
			return nil, fmt.Errorf("worlds %q: want a range such as 2-8 or a list such as 2,4,8", s)
		}
		for w := a; w <= b; w++ {
			out = append(out, w)
		}
	} else {
		for _, f := range strings.Split(s, ",") {
			w, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				return nil, fmt.Errorf("worlds %q: want a range such as 2-8 or a list such as 2,4,8", s)
			}
			out = append(out, w)
		}
	}
	for _, w := range out {
		if w < 1 || w > 72 {
			return nil, fmt.Errorf("worlds %q: world %d out of range [1, 72]", s, w)
		}
	}
	return out, nil
}

// compiled is a Program checked against its PTX, its expressions parsed.
type compiled struct {
	prog      *Program
	src       *Source
	timeout   time.Duration
	occupancy *sim.Occupancy
	scope     *scope // where its expressions' variables live
	vars      []namedExpr
	buffers   []*cBuffer
	bufIdx    map[string]int
	steps     []cStep
}

type namedExpr struct {
	name string
	slot int
	x    *expr
}

type cBuffer struct {
	Buffer
	idx   int
	bytes *expr
	init  *cFill
	count *expr   // a table's entries
	entry *cParam // a table's entry, a struct
}

type cFill struct {
	dtype         string
	value         *expr
	offset, count *expr // nil: 0, to the end
}

type cStep struct {
	when   *expr // nil: every rank
	memset *cMemset
	graph  *cGraph
	wait   []int
	write  *cWrite
	launch *cLaunch
	sync   bool
	bar    bool
	check  *cCheck
	repeat *cRepeat
	what   string // "step 3 (launch k)"
}

type cWrite struct {
	buf    int
	stream int
	fill   cFill
}

type cMemset struct {
	buf                        int
	value, offset, bytes, rank *expr // nil: 0, 0, to the end, this rank's copy
	stream                     int
}

type cGraph struct {
	stream  int
	replays *expr
	steps   []cStep
}

type cLaunch struct {
	sig                 *Signature
	grid, block, shared *expr
	stream              int
	params              []cParam
}

type cCheck struct {
	buf  int
	fill cFill
	tol  float64
}

type cRepeat struct {
	times *expr
	path  string // "2" for step 2, "2.1" for the first step inside it
	steps []cStep
}

type cParam struct {
	form   string
	value  *expr
	buf    int
	rank   *expr
	offset *expr
	len    int
	fields []cParam
	size   int // bytes of the packed value
	align  int
}

// compile checks p against src and parses its expressions, naming every
// problem found.
func compile(p *Program, src *Source) (*compiled, error) {
	c := &compiled{prog: p, src: src, bufIdx: map[string]int{}, timeout: 10 * time.Second}
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if p.Timeout != "" {
		d, err := time.ParseDuration(p.Timeout)
		if err != nil || d <= 0 {
			bad("timeout %q: want a positive duration such as 10s", p.Timeout)
		}
		c.timeout = d
	}
	if o := p.Occupancy; o != nil {
		for _, f := range []struct {
			name string
			v    int
		}{{"sms", o.SMs}, {"threads_per_sm", o.ThreadsPerSM}, {"blocks_per_sm", o.BlocksPerSM}, {"registers_per_sm", o.RegistersPerSM},
			{"shared_per_sm", o.SharedPerSM}, {"shared_per_block", o.SharedPerBlock}, {"reserved_shared", o.ReservedShared},
			{"registers", o.Registers}, {"resident_blocks", o.ResidentBlocks}} {
			if f.v < 0 {
				bad("occupancy: %s: negative (%d)", f.name, f.v)
			}
		}
		if o.Registers > 255 {
			bad("occupancy: registers: %d, more than a thread may have (255)", o.Registers)
		}
	}
	c.occupancy = p.Occupancy.device()
	if _, err := ParseWorlds(p.Worlds); err != nil {
		errs = append(errs, err)
	}
	all := make([]string, 0, len(p.Vars))
	for n := range p.Vars {
		all = append(all, n)
	}
	sort.Strings(all)
	var names []string
	for _, n := range all {
		if builtin[n] {
			bad("vars: %q is a built-in variable", n)
			continue
		}
		names = append(names, n)
	}
	c.scope = newScope(names)
	for _, n := range names {
		x, err := c.scope.expr(string(p.Vars[n]))
		if err != nil {
			bad("vars: %s: %v", n, err)
			continue
		}
		c.vars = append(c.vars, namedExpr{n, c.scope.slots[n], x})
	}
	parse := func(what string, e Expr, def string) *expr {
		if e == "" {
			if def == "" {
				bad("%s: missing", what)
				return nil
			}
			e = Expr(def)
		}
		x, err := c.scope.expr(string(e))
		if err != nil {
			bad("%s: %v", what, err)
		}
		return x
	}
	fill := func(what string, f Fill) cFill {
		if dtypeSizes[f.DType] == 0 {
			bad("%s: dtype %q: want one of u8 u16 u32 u64 s8 s16 s32 s64 f16 bf16 f32 f64", what, f.DType)
		}
		cf := cFill{dtype: f.DType, value: parse(what+": value", f.Value, "")}
		if f.Offset != "" {
			cf.offset = parse(what+": offset", f.Offset, "")
		}
		if f.Count != "" {
			cf.count = parse(what+": count", f.Count, "")
		}
		return cf
	}
	if len(p.Buffers) == 0 {
		bad("buffers: none declared")
	}
	for i, b := range p.Buffers {
		what := fmt.Sprintf("buffer %d (%s)", i, b.Name)
		if b.Name == "" {
			bad("%s: no name", what)
		}
		if _, dup := c.bufIdx[b.Name]; dup {
			bad("%s: name used twice", what)
		}
		if b.Kind != "symmetric" && b.Kind != "signal" && b.Kind != "plain" && b.Kind != "table" {
			bad("%s: kind %q: want symmetric, signal, plain or table", what, b.Kind)
		}
		cb := &cBuffer{Buffer: b, idx: i}
		switch {
		case b.Kind == "table" && (b.Table == nil || len(b.Table.Entry) == 0):
			bad("%s: a table buffer needs a table with its count and entry fields", what)
		case b.Kind == "table" && (b.Bytes != "" || b.Init != nil):
			bad("%s: a table buffer's size and contents are its table's: leave out bytes and init", what)
		case b.Kind != "table" && b.Table != nil:
			bad("%s: only a table buffer has a table", what)
		case b.Kind != "table":
			cb.bytes = parse(what+": bytes", b.Bytes, "")
		}
		if b.Init != nil {
			f := fill(what+": init", *b.Init)
			cb.init = &f
		}
		c.bufIdx[b.Name] = i
		c.buffers = append(c.buffers, cb)
	}
	buffer := func(what, name string) int {
		i, ok := c.bufIdx[name]
		if !ok {
			bad("%s: no buffer %q", what, name)
			return -1
		}
		return i
	}
	local := func(i int) bool {
		return i < len(c.buffers) && (c.buffers[i].Kind == "plain" || c.buffers[i].Kind == "table")
	}
	var param func(what string, pr Param) cParam
	param = func(what string, pr Param) cParam {
		cp := cParam{form: pr.Form, buf: -1}
		switch pr.Form {
		case "ptr", "ptrs", "ptrarray":
			cp.buf = buffer(what, pr.Buffer)
			cp.size, cp.align = 8, 8
			if cp.buf >= 0 && pr.Form != "ptr" && local(cp.buf) {
				bad("%s: %s of %s buffer %q: only symmetric and signal buffers have a pointer table", what, pr.Form, c.buffers[cp.buf].Kind, pr.Buffer)
			}
			if pr.Form == "ptr" {
				if pr.Rank != "" {
					cp.rank = parse(what+": rank", pr.Rank, "")
					if cp.buf >= 0 && local(cp.buf) {
						bad("%s: rank of %s buffer %q: a %s buffer is not mapped by its peers", what, c.buffers[cp.buf].Kind, pr.Buffer, c.buffers[cp.buf].Kind)
					}
				}
				if pr.Offset != "" {
					cp.offset = parse(what+": offset", pr.Offset, "")
				}
			}
			if pr.Form == "ptrarray" {
				if pr.Len < 1 || pr.Len > 72 {
					bad("%s: ptrarray needs len between 1 and 72, got %d", what, pr.Len)
				}
				cp.len = max(pr.Len, 1)
				cp.size = 8 * cp.len
			}
		case "struct":
			if len(pr.Fields) == 0 {
				bad("%s: empty struct", what)
			}
			cp.align = 1
			for j, f := range pr.Fields {
				cf := param(fmt.Sprintf("%s field %d", what, j), f)
				cp.size = alignUp(cp.size, cf.align) + cf.size
				cp.align = max(cp.align, cf.align)
				cp.fields = append(cp.fields, cf)
			}
			cp.size = alignUp(cp.size, cp.align)
		default:
			cp.value = parse(what, pr.Value, "")
			cp.size = scalarForms[pr.Form]
			cp.align = cp.size
		}
		return cp
	}
	for _, cb := range c.buffers {
		if cb.Kind != "table" || cb.Table == nil || len(cb.Table.Entry) == 0 {
			continue
		}
		what := fmt.Sprintf("buffer %d (%s): table", cb.idx, cb.Name)
		cb.count = parse(what+": count", cb.Table.Count, "")
		e := param(what+": entry", Param{Form: "struct", Fields: cb.Table.Entry})
		cb.entry = &e
	}
	streamNo := func(what string, k int) {
		if k < 0 || k > 64 {
			bad("%s: stream %d out of range [0, 64]", what, k)
		}
	}
	var steps func(path string, ss []Step, graph *Graph) []cStep
	steps = func(path string, ss []Step, graph *Graph) []cStep {
		var out []cStep
		for i, s := range ss {
			n := 0
			for _, set := range []bool{s.Write != nil, s.Launch != nil, s.Sync, s.Barrier, s.Check != nil, s.Repeat != nil,
				s.Memset != nil, s.Graph != nil, s.Wait != nil} {
				if set {
					n++
				}
			}
			// A nested step is named by its path: step 1.3 is the third
			// step of step 1 (a repeat or a graph).
			what := fmt.Sprintf("step %s%d", path, i+1)
			if n != 1 {
				bad("%s: want exactly one of write, memset, launch, graph, sync, wait, barrier, check, repeat", what)
				continue
			}
			if graph != nil && s.Launch == nil && s.Memset == nil {
				bad("%s: a graph captures only launch and memset steps", what)
				continue
			}
			cs := cStep{sync: s.Sync, bar: s.Barrier, what: what}
			if s.When != "" {
				cs.when = parse(what+": when", s.When, "")
			}
			switch {
			case s.Write != nil:
				cs.what += " (write " + s.Write.Buffer + ")"
				streamNo(cs.what, s.Write.Stream)
				cs.write = &cWrite{buf: buffer(cs.what, s.Write.Buffer), stream: s.Write.Stream, fill: fill(cs.what, s.Write.Fill)}
			case s.Memset != nil:
				m := s.Memset
				cs.what += " (memset " + m.Buffer + ")"
				cm := &cMemset{buf: buffer(cs.what, m.Buffer), stream: m.Stream}
				if graph != nil {
					if m.Stream != 0 && m.Stream != graph.Stream {
						bad("%s: stream %d: a graph's steps run on the graph's stream %d", cs.what, m.Stream, graph.Stream)
					}
					cm.stream = graph.Stream
				}
				streamNo(cs.what, m.Stream)
				for _, f := range []struct {
					name string
					e    Expr
					dst  **expr
				}{{"value", m.Value, &cm.value}, {"offset", m.Offset, &cm.offset}, {"bytes", m.Bytes, &cm.bytes}, {"rank", m.Rank, &cm.rank}} {
					if f.e != "" {
						*f.dst = parse(cs.what+": "+f.name, f.e, "")
					}
				}
				if m.Rank != "" && cm.buf >= 0 && c.buffers[cm.buf].Kind == "plain" {
					bad("%s: rank of plain buffer %q: a plain buffer is not mapped by its peers", cs.what, m.Buffer)
				}
				cs.memset = cm
			case s.Graph != nil:
				g := s.Graph
				cs.what += " (graph)"
				streamNo(cs.what, g.Stream)
				if len(g.Steps) == 0 {
					bad("%s: steps: none given", cs.what)
				}
				cs.graph = &cGraph{stream: g.Stream, replays: parse(cs.what+": replays", g.Replays, "1"),
					steps: steps(path+fmt.Sprint(i+1)+".", g.Steps, g)}
			case s.Wait != nil:
				cs.what += " (wait)"
				if len(s.Wait.Streams) == 0 {
					bad("%s: streams: none given", cs.what)
				}
				for _, k := range s.Wait.Streams {
					streamNo(cs.what, k)
				}
				cs.wait = s.Wait.Streams
			case s.Check != nil:
				cs.what += " (check " + s.Check.Buffer + ")"
				if s.Check.Tolerance < 0 {
					bad("%s: negative tolerance", cs.what)
				}
				cs.check = &cCheck{buf: buffer(cs.what, s.Check.Buffer), fill: fill(cs.what, s.Check.Fill), tol: s.Check.Tolerance}
			case s.Repeat != nil:
				rp := fmt.Sprint(path, i+1)
				cs.repeat = &cRepeat{times: parse(what+": times", s.Repeat.Times, ""), path: rp, steps: steps(rp+".", s.Repeat.Steps, nil)}
			case s.Launch != nil:
				l := s.Launch
				cs.what += " (launch " + l.Entry + ")"
				cl := &cLaunch{grid: parse(cs.what+": grid", l.Grid, ""), block: parse(cs.what+": block", l.Block, ""),
					shared: parse(cs.what+": shared", l.Shared, "0"), stream: l.Stream}
				streamNo(cs.what, l.Stream)
				if graph != nil {
					if l.Stream != 0 && l.Stream != graph.Stream {
						bad("%s: stream %d: a graph's steps run on the graph's stream %d", cs.what, l.Stream, graph.Stream)
					}
					cl.stream = graph.Stream
				}
				sig, err := src.Signature(l.Entry)
				if err != nil {
					errs = append(errs, fmt.Errorf("%s: %w", cs.what, err))
				} else {
					cl.sig = sig
					if len(l.Params) != len(sig.Params) {
						bad("%s: %d parameters given, the entry declares %d: %s", cs.what, len(l.Params), len(sig.Params), declList(sig))
					}
					for j, pr := range l.Params {
						pw := fmt.Sprintf("%s parameter %d", cs.what, j)
						cp := param(pw, pr)
						if j < len(sig.Params) {
							if err := fits(cp, sig.Params[j]); err != nil {
								bad("%s: %v", pw, err)
							}
						}
						cl.params = append(cl.params, cp)
					}
				}
				cs.launch = cl
			}
			out = append(out, cs)
		}
		return out
	}
	c.steps = steps("", p.Steps, nil)
	if len(p.Steps) == 0 {
		bad("steps: none given")
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return c, nil
}

var builtin = map[string]bool{"rank": true, "world": true, "i": true, "iter": true}

// fits checks a parameter value against its declaration.
func fits(p cParam, d ParamDecl) error {
	switch {
	case p.form == "struct" || p.form == "ptrarray":
		if d.Type != ".b8" && d.Count == 1 {
			return fmt.Errorf("%s is a by-value array (%d bytes): the declaration %s is a scalar", p.form, p.size, d)
		}
		if p.size > d.Size() {
			return fmt.Errorf("%s of %d bytes does not fit %s (%d bytes)", p.form, p.size, d, d.Size())
		}
	case d.Count > 1 || d.Type == ".b8" && d.Size() != 1:
		return fmt.Errorf("%s is a scalar of %d bytes: the declaration %s is an array of %d bytes (give a struct or ptrarray)", p.form, p.size, d, d.Size())
	case p.size != d.Size():
		return fmt.Errorf("%s is %d bytes: the declaration %s is %d bytes", p.form, p.size, d, d.Size())
	case strings.HasPrefix(p.form, "f") != strings.HasPrefix(d.Type, ".f") && !strings.HasPrefix(d.Type, ".b") && d.Type != ".f16":
		// (a .f16 parameter takes its bits as a u16: there is no f16 form)
		return fmt.Errorf("%s given for %s: floats and integers differ", p.form, d)
	}
	return nil
}

func declList(sig *Signature) string {
	var parts []string
	for _, p := range sig.Params {
		parts = append(parts, p.String())
	}
	return sig.Entry + "(" + strings.Join(parts, ", ") + ")"
}

func alignUp(n, a int) int { return (n + a - 1) / a * a }

var dtypeSizes = map[string]int{"u8": 1, "u16": 2, "u32": 4, "u64": 8, "s8": 1, "s16": 2, "s32": 4, "s64": 8,
	"f16": 2, "bf16": 2, "f32": 4, "f64": 8}
