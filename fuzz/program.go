package fuzz

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/kernels"
	"github.com/symmem/symmem/rank"
	"github.com/symmem/symmem/workload"
)

// Form is one way of running an all-reduce, as a program step names it.
type Form int

// The collective forms a program runs.
const (
	// OneShot is [rank.Rank.OneShotAllReduce]: the result in a new tensor.
	OneShot Form = iota
	// OneShotOut is [rank.Rank.OneShotAllReduceOut].
	OneShotOut
	// OneShotCopy is [rank.Rank.OneShotAllReduceCopy]: the input comes from
	// a plain tensor the kernel copies into the symmetric buffer first.
	OneShotCopy
	// TwoShot is [rank.Rank.TwoShotAllReduce], in place.
	TwoShot
	// TwoShotOut is [rank.Rank.TwoShotAllReduceOut]: reduce-scatter, then
	// gather into the output.
	TwoShotOut
	// LL is [rank.LowLatency.AllReduce], through one instance per group.
	LL
	// IntraNode is [rank.IntraNodeComm.AllReduce] of a plain tensor, in
	// place, on the world (sum only).
	IntraNode
	numForms
)

var formNames = [numForms]string{
	OneShot: "one-shot", OneShotOut: "one-shot-out", OneShotCopy: "one-shot-copy",
	TwoShot: "two-shot", TwoShotOut: "two-shot-out", LL: "ll", IntraNode: "intra-node",
}

func (f Form) String() string {
	if f >= 0 && f < numForms {
		return formNames[f]
	}
	return fmt.Sprintf("Form(%d)", int(f))
}

// ParseForm accepts the names [Form.String] gives.
func ParseForm(s string) (Form, error) {
	for f, n := range formNames {
		if n == s {
			return Form(f), nil
		}
	}
	return 0, fmt.Errorf("unknown collective form %q (want one of %s)", s, strings.Join(formNames[:], ", "))
}

// capturable reports whether a graph may record the form.
func (f Form) capturable() bool { return f == OneShotOut || f == TwoShot || f == TwoShotOut || f == LL }

// Coll is one all-reduce of a program: its form, its group, where its
// input lies in which symmetric buffer, its size, dtype and reduction.
type Coll struct {
	Form   Form
	Group  int    // index into Program.Groups
	Buf    int    // index into Program.Bufs
	Offset uint64 // byte offset of the tensor in the buffer
	Bytes  uint64
	DType  device.DType
	Op     device.ReduceOp
}

func (c Coll) String() string {
	return fmt.Sprintf("%s g%d b%d@%d %d %s %s", c.Form, c.Group, c.Buf, c.Offset, c.Bytes, c.DType, c.Op)
}

// StepKind is what a program step does.
type StepKind int

// The step kinds.
const (
	// StepColl runs its collectives one after the other, each checked
	// right after it returns.
	StepColl StepKind = iota
	// StepAsync queues its collectives back to back with the rank
	// asynchronous, then synchronizes and checks them all.
	StepAsync
	// StepCapture records its collectives in a graph and replays it
	// Replays times, rewriting the inputs before and checking the
	// outputs after every replay.
	StepCapture
	// StepBarrier writes the rank's region, runs a signal barrier on the
	// group, reads the next member's region through its mapping and
	// checks it, then runs a second barrier.
	StepBarrier
	// StepSignal does the same with point-to-point signals: put to the
	// next member, wait for the previous one, read its region, and
	// acknowledge on the next channel.
	StepSignal
	// StepRealloc frees buffer Buf and allocates it again: the next use on
	// each group rendezvouses the new allocation.
	StepRealloc
	// StepTimeout waits, on every member of the group, for a signal that
	// nobody sends (the rank's own slot of its own pad, on Channel), with
	// a short timeout: the wait must fail with a timeout error that
	// reaches the rank, as a signal lost to a fault would make it.
	StepTimeout
	numStepKinds
)

var stepNames = [numStepKinds]string{"coll", "async", "capture", "barrier", "signal", "realloc", "timeout"}

func (k StepKind) String() string {
	if k >= 0 && k < numStepKinds {
		return stepNames[k]
	}
	return fmt.Sprintf("StepKind(%d)", int(k))
}

// Step is one step of a program, run by every member of the groups it
// uses (a rank outside them skips it).
type Step struct {
	Kind    StepKind
	Colls   []Coll // coll, async, capture
	Replays int    // capture
	// Region is where barrier and signal steps write and read (its Form,
	// DType and Op are unused); a timeout step uses its group and buffer.
	Region  Coll
	Channel int // barrier, signal, timeout
	Buf     int // realloc
}

func (s Step) String() string {
	switch s.Kind {
	case StepColl, StepAsync, StepCapture:
		parts := make([]string, len(s.Colls))
		for i, c := range s.Colls {
			parts[i] = c.String()
		}
		head := ""
		switch s.Kind {
		case StepAsync:
			head = "async "
		case StepCapture:
			head = fmt.Sprintf("capture x%d ", s.Replays)
		}
		return head + strings.Join(parts, " + ")
	case StepBarrier, StepSignal:
		r := s.Region
		return fmt.Sprintf("%s g%d b%d@%d %d ch%d", s.Kind, r.Group, r.Buf, r.Offset, r.Bytes, s.Channel)
	case StepRealloc:
		return fmt.Sprintf("realloc b%d", s.Buf)
	case StepTimeout:
		return fmt.Sprintf("timeout g%d b%d ch%d", s.Region.Group, s.Region.Buf, s.Channel)
	}
	return s.Kind.String()
}

// Program is what every rank of a fuzz case runs: the groups it registers
// (group 0 is the world), the symmetric buffers it allocates, and its
// steps. Every collective's inputs are rewritten before it runs (seeded
// per rank, step and replay) and its result is checked bitwise against the
// reference on every rank.
type Program struct {
	World  int
	Groups [][]int  // members in increasing order; Groups[0] is every rank
	Bufs   []uint64 // buffer sizes in bytes
	Steps  []Step
}

// groupName is the name group g is registered under.
func groupName(g int) string {
	if g == 0 {
		return rank.WorldGroup
	}
	return fmt.Sprintf("g%d", g)
}

// String is the program's text form, which [ParseProgram] reads back:
// "world=3 groups=1,2 bufs=4096,1024; one-shot g0 b0@0 260 float32 sum;
// async two-shot-out g1 b1@16 64 bfloat16 max + ll g0 b0@512 16 float32
// sum; capture x2 two-shot g0 b0@0 64 float16 avg; barrier g1 b0@0 64 ch3;
// realloc b1".
func (p Program) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "world=%d", p.World)
	if len(p.Groups) > 1 {
		gs := make([]string, len(p.Groups)-1)
		for i, g := range p.Groups[1:] {
			ms := make([]string, len(g))
			for j, m := range g {
				ms[j] = strconv.Itoa(m)
			}
			gs[i] = strings.Join(ms, ",")
		}
		fmt.Fprintf(&b, " groups=%s", strings.Join(gs, "/"))
	}
	bs := make([]string, len(p.Bufs))
	for i, n := range p.Bufs {
		bs[i] = strconv.FormatUint(n, 10)
	}
	fmt.Fprintf(&b, " bufs=%s", strings.Join(bs, ","))
	for _, s := range p.Steps {
		b.WriteString("; ")
		b.WriteString(s.String())
	}
	return b.String()
}

// ParseProgram reads the text form of a program.
func ParseProgram(s string) (Program, error) {
	parts := strings.Split(s, ";")
	var p Program
	if err := p.parseHeader(strings.TrimSpace(parts[0])); err != nil {
		return Program{}, fmt.Errorf("program: %w", err)
	}
	for _, part := range parts[1:] {
		st, err := parseStep(strings.TrimSpace(part))
		if err != nil {
			return Program{}, fmt.Errorf("program step %q: %w", strings.TrimSpace(part), err)
		}
		p.Steps = append(p.Steps, st)
	}
	if err := p.Validate(); err != nil {
		return Program{}, err
	}
	return p, nil
}

func (p *Program) parseHeader(h string) error {
	seen := map[string]bool{}
	for _, kv := range strings.Fields(h) {
		key, val, ok := strings.Cut(kv, "=")
		if !ok || seen[key] {
			return fmt.Errorf("header %q: %q is not a new key=value", h, kv)
		}
		seen[key] = true
		switch key {
		case "world":
			w, err := strconv.Atoi(val)
			if err != nil {
				return fmt.Errorf("world: %w", err)
			}
			p.World = w
		case "groups":
			for _, g := range strings.Split(val, "/") {
				var ms []int
				for _, m := range strings.Split(g, ",") {
					r, err := strconv.Atoi(m)
					if err != nil {
						return fmt.Errorf("groups: %w", err)
					}
					ms = append(ms, r)
				}
				p.Groups = append(p.Groups, ms)
			}
		case "bufs":
			for _, b := range strings.Split(val, ",") {
				n, err := strconv.ParseUint(b, 10, 64)
				if err != nil {
					return fmt.Errorf("bufs: %w", err)
				}
				p.Bufs = append(p.Bufs, n)
			}
		default:
			return fmt.Errorf("header %q: unknown key %q (want world, groups, bufs)", h, key)
		}
	}
	if !seen["world"] || !seen["bufs"] {
		return fmt.Errorf("header %q: want world= and bufs=", h)
	}
	world := make([]int, max(p.World, 0))
	for i := range world {
		world[i] = i
	}
	p.Groups = append([][]int{world}, p.Groups...)
	return nil
}

func parseStep(s string) (Step, error) {
	f := strings.Fields(s)
	if len(f) == 0 {
		return Step{}, fmt.Errorf("empty step")
	}
	switch f[0] {
	case "realloc":
		if len(f) != 2 {
			return Step{}, fmt.Errorf("want realloc bN")
		}
		b, err := index(f[1], "b")
		return Step{Kind: StepRealloc, Buf: b}, err
	case "timeout":
		if len(f) != 4 {
			return Step{}, fmt.Errorf("want timeout gN bN chN")
		}
		st := Step{Kind: StepTimeout}
		var err error
		if st.Region.Group, err = index(f[1], "g"); err != nil {
			return Step{}, err
		}
		if st.Region.Buf, err = index(f[2], "b"); err != nil {
			return Step{}, err
		}
		st.Channel, err = index(f[3], "ch")
		return st, err
	case "barrier", "signal":
		if len(f) != 5 {
			return Step{}, fmt.Errorf("want %s gN bN@OFFSET BYTES chN", f[0])
		}
		kind := StepBarrier
		if f[0] == "signal" {
			kind = StepSignal
		}
		r, err := parseRegion(f[1:4])
		if err != nil {
			return Step{}, err
		}
		ch, err := index(f[4], "ch")
		return Step{Kind: kind, Region: r, Channel: ch}, err
	}
	st := Step{Kind: StepColl}
	switch f[0] {
	case "async":
		st.Kind, s = StepAsync, strings.TrimSpace(strings.TrimPrefix(s, "async"))
	case "capture":
		if len(f) < 2 {
			return Step{}, fmt.Errorf("want capture xN COLL")
		}
		n, err := index(f[1], "x")
		if err != nil {
			return Step{}, err
		}
		st.Kind, st.Replays = StepCapture, n
		s = strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(s, "capture"), " "+f[1]))
	}
	for _, c := range strings.Split(s, "+") {
		cf := strings.Fields(c)
		if len(cf) != 6 {
			return Step{}, fmt.Errorf("collective %q: want FORM gN bN@OFFSET BYTES DTYPE OP", strings.TrimSpace(c))
		}
		form, err := ParseForm(cf[0])
		if err != nil {
			return Step{}, err
		}
		coll, err := parseRegion(cf[1:4])
		if err != nil {
			return Step{}, err
		}
		coll.Form = form
		if coll.DType, err = device.ParseDType(cf[4]); err != nil {
			return Step{}, err
		}
		if coll.Op, err = device.ParseReduceOp(cf[5]); err != nil {
			return Step{}, err
		}
		st.Colls = append(st.Colls, coll)
	}
	return st, nil
}

// parseRegion reads "gN bN@OFFSET BYTES".
func parseRegion(f []string) (Coll, error) {
	var c Coll
	var err error
	if c.Group, err = index(f[0], "g"); err != nil {
		return c, err
	}
	buf, off, ok := strings.Cut(f[1], "@")
	if !ok {
		return c, fmt.Errorf("%q: want bN@OFFSET", f[1])
	}
	if c.Buf, err = index(buf, "b"); err != nil {
		return c, err
	}
	if c.Offset, err = strconv.ParseUint(off, 10, 64); err != nil {
		return c, fmt.Errorf("offset %q: %w", off, err)
	}
	if c.Bytes, err = strconv.ParseUint(f[2], 10, 64); err != nil {
		return c, fmt.Errorf("bytes %q: %w", f[2], err)
	}
	c.DType, c.Op = device.Float32, device.Sum
	return c, nil
}

// index reads "<prefix>N".
func index(s, prefix string) (int, error) {
	v, ok := strings.CutPrefix(s, prefix)
	n, err := strconv.Atoi(v)
	if !ok || err != nil || n < 0 {
		return 0, fmt.Errorf("%q: want %sN", s, prefix)
	}
	return n, nil
}

// maxProgramBytes bounds a program's buffers and tensors.
const maxProgramBytes = 1 << 26

// Validate checks the program: groups of distinct ranks in range, tensors
// inside their buffers and aligned for their dtype, forms their groups
// and buffers allow.
func (p Program) Validate() error {
	if p.World < 1 || p.World > 72 {
		return fmt.Errorf("program: world size %d out of range [1, 72]", p.World)
	}
	if len(p.Groups) == 0 || len(p.Groups[0]) != p.World {
		return fmt.Errorf("program: group 0 must be the world")
	}
	for g, ms := range p.Groups {
		if len(ms) == 0 {
			return fmt.Errorf("program: group %d has no ranks", g)
		}
		for i, m := range ms {
			if m < 0 || m >= p.World || (i > 0 && ms[i-1] >= m) {
				return fmt.Errorf("program: group %d %v: want increasing ranks within [0, %d)", g, ms, p.World)
			}
		}
	}
	if len(p.Bufs) == 0 {
		return fmt.Errorf("program: no buffers")
	}
	for i, n := range p.Bufs {
		if n == 0 || n > maxProgramBytes {
			return fmt.Errorf("program: buffer %d of %d bytes (want 1 to %d)", i, n, maxProgramBytes)
		}
	}
	for i, s := range p.Steps {
		if err := p.validateStep(s); err != nil {
			return fmt.Errorf("program step %d %q: %w", i, s, err)
		}
	}
	return nil
}

func (p Program) validateStep(s Step) error {
	switch s.Kind {
	case StepRealloc:
		if s.Buf >= len(p.Bufs) {
			return fmt.Errorf("no buffer %d", s.Buf)
		}
		return nil
	case StepTimeout:
		switch {
		case s.Region.Group >= len(p.Groups):
			return fmt.Errorf("no group %d", s.Region.Group)
		case s.Region.Buf >= len(p.Bufs):
			return fmt.Errorf("no buffer %d", s.Region.Buf)
		case s.Channel > 1<<20:
			return fmt.Errorf("channel %d out of range", s.Channel)
		}
		return nil
	case StepBarrier, StepSignal:
		if err := p.validateRegion(s.Region); err != nil {
			return err
		}
		if s.Region.Bytes%4 != 0 || s.Region.Offset%4 != 0 {
			return fmt.Errorf("region of %d bytes at %d: want multiples of 4", s.Region.Bytes, s.Region.Offset)
		}
		if s.Channel > 1<<20 {
			return fmt.Errorf("channel %d out of range", s.Channel)
		}
		return nil
	case StepColl, StepAsync, StepCapture:
	default:
		return fmt.Errorf("unknown step kind %d", int(s.Kind))
	}
	if len(s.Colls) == 0 {
		return fmt.Errorf("no collectives")
	}
	if s.Kind == StepCapture && (s.Replays < 1 || s.Replays > 16) {
		return fmt.Errorf("%d replays (want 1 to 16)", s.Replays)
	}
	for i, c := range s.Colls {
		if err := p.validateRegion(c); err != nil {
			return err
		}
		if c.Form < 0 || c.Form >= numForms {
			return fmt.Errorf("unknown form %d", int(c.Form))
		}
		if !c.DType.Valid() || !c.Op.Valid() {
			return fmt.Errorf("collective %q: unsupported dtype or reduction", c)
		}
		if _, err := kernels.CheckAlignment(c.Offset, c.Bytes, c.DType); err != nil {
			return fmt.Errorf("collective %q: %w", c, err)
		}
		if c.Form == IntraNode && (c.Group != 0 || c.Op != device.Sum || p.World < 2 || p.World > 8) {
			return fmt.Errorf("collective %q: intra-node reduces sums on the world of 2 to 8 ranks", c)
		}
		if s.Kind == StepCapture && !c.Form.capturable() {
			return fmt.Errorf("collective %q: a graph cannot capture %s", c, c.Form)
		}
		if s.Kind != StepColl {
			for _, d := range s.Colls[:i] {
				// With the guards written around each.
				if d.Buf == c.Buf && c.Offset < d.Offset+d.Bytes+2*guardBytes && d.Offset < c.Offset+c.Bytes+2*guardBytes {
					return fmt.Errorf("collectives %q and %q of one batch lie within %d bytes of each other", d, c, 2*guardBytes)
				}
			}
		}
	}
	return nil
}

func (p Program) validateRegion(c Coll) error {
	if c.Group >= len(p.Groups) {
		return fmt.Errorf("no group %d", c.Group)
	}
	if c.Buf >= len(p.Bufs) {
		return fmt.Errorf("no buffer %d", c.Buf)
	}
	if c.Bytes == 0 || c.Offset > p.Bufs[c.Buf] || c.Bytes > p.Bufs[c.Buf]-c.Offset {
		return fmt.Errorf("%d bytes at %d do not fit buffer %d of %d bytes", c.Bytes, c.Offset, c.Buf, p.Bufs[c.Buf])
	}
	return nil
}

// members returns the members of the groups a step uses, in increasing
// order.
func (p Program) members(s Step) []int {
	seen := make([]bool, p.World)
	mark := func(g int) {
		for _, m := range p.Groups[g] {
			seen[m] = true
		}
	}
	switch s.Kind {
	case StepRealloc:
		mark(0)
	case StepBarrier, StepSignal, StepTimeout:
		mark(s.Region.Group)
	default:
		for _, c := range s.Colls {
			mark(c.Group)
		}
	}
	var out []int
	for r, ok := range seen {
		if ok {
			out = append(out, r)
		}
	}
	return out
}

// keep returns the program with only the steps at the given indices.
func (p Program) keep(steps []int) Program {
	q := p
	q.Steps = make([]Step, len(steps))
	for i, s := range steps {
		q.Steps[i] = p.Steps[s]
	}
	return q
}

// withColls returns the program with step i's collectives replaced.
func (p Program) withColls(i int, cs []Coll) Program {
	q := p
	q.Steps = slices.Clone(p.Steps)
	q.Steps[i].Colls = slices.Clone(cs)
	return q
}

// withColl returns the program with collective j of step i replaced.
func (p Program) withColl(i, j int, c Coll) Program {
	q := p
	q.Steps = slices.Clone(p.Steps)
	q.Steps[i].Colls = slices.Clone(p.Steps[i].Colls)
	q.Steps[i].Colls[j] = c
	return q
}

// tidy returns the program without the groups and buffers no step uses,
// renumbered, and whether there were any.
func (p Program) tidy() (Program, bool) {
	usedG, usedB := make([]bool, len(p.Groups)), make([]bool, len(p.Bufs))
	usedG[0] = true
	for _, s := range p.Steps {
		switch s.Kind {
		case StepRealloc:
			usedB[s.Buf] = true
		case StepBarrier, StepSignal, StepTimeout:
			usedG[s.Region.Group], usedB[s.Region.Buf] = true, true
		default:
			for _, c := range s.Colls {
				usedG[c.Group], usedB[c.Buf] = true, true
			}
		}
	}
	if !slices.Contains(usedB, true) {
		usedB[0] = true
	}
	newG, newB := renumber(usedG), renumber(usedB)
	if !slices.Contains(newG, -1) && !slices.Contains(newB, -1) {
		return p, false
	}
	q := Program{World: p.World}
	for g, ms := range p.Groups {
		if usedG[g] {
			q.Groups = append(q.Groups, ms)
		}
	}
	for b, n := range p.Bufs {
		if usedB[b] {
			q.Bufs = append(q.Bufs, n)
		}
	}
	for _, s := range p.Steps {
		s.Colls = slices.Clone(s.Colls)
		for i := range s.Colls {
			s.Colls[i].Group, s.Colls[i].Buf = newG[s.Colls[i].Group], newB[s.Colls[i].Buf]
		}
		switch s.Kind {
		case StepRealloc:
			s.Buf = newB[s.Buf]
		case StepBarrier, StepSignal, StepTimeout:
			s.Region.Group, s.Region.Buf = newG[s.Region.Group], newB[s.Region.Buf]
		}
		q.Steps = append(q.Steps, s)
	}
	return q, true
}

// renumber maps the indices in use to 0, 1, ... and the others to -1.
func renumber(used []bool) []int {
	out := make([]int, len(used))
	n := 0
	for i, u := range used {
		out[i] = -1
		if u {
			out[i] = n
			n++
		}
	}
	return out
}

// SpecProgram is the program of one checked all-reduce of spec on the
// world: a buffer holding the tensor at spec's offset, between guards, and
// one collective of spec's algorithm (auto resolved by size). Inputs are
// seeded by the case's input seed, not spec.Seed.
func SpecProgram(spec workload.Spec) (Program, error) {
	if err := spec.Validate(); err != nil {
		return Program{}, err
	}
	form := map[workload.Algo]Form{workload.OneShot: OneShot, workload.TwoShot: TwoShot, workload.LowLatency: LL}[spec.Algo.Resolve(spec.Bytes, spec.World)]
	p := Program{
		World:  spec.World,
		Groups: [][]int{make([]int, spec.World)},
		Bufs:   []uint64{guardBytes + spec.Offset + spec.Bytes + guardBytes},
		Steps: []Step{{Kind: StepColl, Colls: []Coll{{
			Form: form, Offset: guardBytes + spec.Offset, Bytes: spec.Bytes, DType: spec.DType, Op: spec.Op,
		}}}},
	}
	for i := range p.Groups[0] {
		p.Groups[0][i] = i
	}
	return p, p.Validate()
}
