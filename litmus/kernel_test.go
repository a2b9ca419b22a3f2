package litmus

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/symmem/symmem/actor"
	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/device/sim"
	"github.com/symmem/symmem/device/sim/memmodel"
	"github.com/symmem/symmem/device/sim/ptx"
	"github.com/symmem/symmem/internal/longtest"
)

// A litmus test as a kernel: every GPU of the test is a simulated device
// running one launch, whose blocks are the test's CTAs and whose threads
// are the CTA's litmus threads in order of appearance. Locations are
// 8-byte words of one allocation every device maps; at the end each
// thread stores its registers after them, plainly, and the host reads
// registers and locations back.
//
// In a test with barriers every litmus thread is lane 0 of a warp of its
// own, whose other lanes exit at once, and each barrier of a CTA (an
// instance and id of the litmus test) is a PTX barrier of its own with
// an explicit thread count: the warps of the litmus threads that meet
// there (kernel_barriers_test.go).

// regBase is the offset of the register dump; each thread has regSlots
// words.
const (
	regBase  = 4096
	regSlots = 64
)

// kernelTest is a litmus test translated to PTX.
type kernelTest struct {
	test  *Test
	mod   *ptx.Module
	gpus  []gpuLaunch
	locs  []string
	regs  []map[string]int // per thread: register -> slot
	world int
}

// gpuLaunch is one device's launch.
type gpuLaunch struct {
	entry         string
	grid, threads int
}

// translate turns t into PTX, or says why it cannot.
func translate(t *Test) (*kernelTest, error) {
	p := &t.Program
	k := &kernelTest{test: t}
	for l := range p.Init {
		k.locs = append(k.locs, l)
	}
	for _, th := range p.Threads {
		for _, in := range th.Code {
			if in.Loc != "" && !slices.Contains(k.locs, in.Loc) {
				k.locs = append(k.locs, in.Loc)
			}
		}
	}
	sort.Strings(k.locs)
	plan, err := planBarriers(p)
	if err != nil {
		return nil, err
	}
	if 8*len(k.locs) > regBase {
		return nil, fmt.Errorf("%d locations", len(k.locs))
	}
	loc := map[string]int{}
	for i, l := range k.locs {
		loc[l] = i
	}
	// Place threads: per GPU, CTAs are blocks, threads lanes in order
	// (with barriers, lane 0 of warps in order).
	type slot struct{ gpu, cta, lane int }
	places := make([]slot, len(p.Threads))
	lanes := map[[2]int]int{}
	stride := 1
	if plan != nil {
		stride = 32
	}
	for i, th := range p.Threads {
		if th.GPU < 0 || th.GPU > 7 || th.CTA < 0 || th.CTA > 7 {
			return nil, fmt.Errorf("thread %s at cta %d gpu %d", th.Name, th.CTA, th.GPU)
		}
		key := [2]int{th.GPU, th.CTA}
		places[i] = slot{th.GPU, th.CTA, stride * lanes[key]}
		lanes[key]++
		k.world = max(k.world, th.GPU+1)
	}
	k.regs = make([]map[string]int, len(p.Threads))
	var b strings.Builder
	b.WriteString(".version 8.0\n.target sm_90\n.address_size 64\n")
	for g := 0; g < k.world; g++ {
		gl := gpuLaunch{entry: fmt.Sprintf("litmus_gpu%d", g), grid: 1, threads: 1}
		var dispatch, bodies, decls strings.Builder
		for i, th := range p.Threads {
			if places[i].gpu != g {
				continue
			}
			gl.grid = max(gl.grid, places[i].cta+1)
			gl.threads = max(gl.threads, places[i].lane+stride, 32*plan.warps(th.GPU, th.CTA))
			fmt.Fprintf(&dispatch, "\tsetp.eq.u32 %%p0, %%tid2, %d;\n\t@%%p0 bra T%d;\n", places[i].cta*1024+places[i].lane, i)
			regs, err := threadPTX(&bodies, &decls, i, &th, loc, plan)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", th.Name, err)
			}
			k.regs[i] = regs
		}
		fmt.Fprintf(&b, ".visible .entry %s(.param .u64 base)\n{\n", gl.entry)
		b.WriteString("\t.reg .b64 %base;\n\t.reg .b64 %t<4>;\n\t.reg .b32 %tid<3>;\n\t.reg .pred %p<2>;\n")
		b.WriteString(decls.String())
		b.WriteString("\tld.param.u64 %base, [base];\n\tmov.u32 %tid0, %tid.x;\n\tmov.u32 %tid1, %ctaid.x;\n\tmad.lo.u32 %tid2, %tid1, 1024, %tid0;\n")
		b.WriteString(dispatch.String())
		b.WriteString("\tret;\n")
		b.WriteString(bodies.String())
		b.WriteString("}\n")
		k.gpus = append(k.gpus, gl)
	}
	mod, err := ptx.Parse(b.String())
	if err != nil {
		return nil, fmt.Errorf("translated PTX: %w\n%s", err, b.String())
	}
	k.mod = mod
	return k, nil
}

// threadPTX writes thread i's code at label Ti to b, its register
// declarations to decls, and returns its registers' dump slots.
func threadPTX(b, decls *strings.Builder, i int, th *memmodel.Thread, loc map[string]int, plan *barrierPlan) (map[string]int, error) {
	regs := map[string]int{}
	reg := func(name string) string {
		if _, ok := regs[name]; !ok {
			regs[name] = len(regs)
		}
		return fmt.Sprintf("%%x%d_%d", i, regs[name])
	}
	op := func(o memmodel.Operand) string {
		if o.Reg != "" {
			return reg(o.Reg)
		}
		return fmt.Sprint(o.Imm)
	}
	for _, in := range th.Code {
		for _, a := range in.Args {
			if a.Reg != "" {
				reg(a.Reg)
			}
		}
		if in.Dst != "" {
			reg(in.Dst)
		}
	}
	for _, r := range slices.Sorted(maps.Keys(th.Regs)) {
		reg(r)
	}
	if len(regs) > regSlots {
		return nil, fmt.Errorf("%d registers", len(regs))
	}
	names := slices.Sorted(maps.Keys(regs))
	for _, r := range names {
		fmt.Fprintf(decls, "\t.reg .b64 %s;\n", reg(r))
	}
	fmt.Fprintf(b, "T%d:\n", i)
	for _, r := range names {
		fmt.Fprintf(b, "\tmov.b64 %s, %d;\n", reg(r), th.Regs[r])
	}
	addr := func(l string) string { return fmt.Sprintf("[%%base+%d]", 8*loc[l]) }
	sem := func(in memmodel.Inst) string {
		if in.Sem == memmodel.Weak {
			return ""
		}
		return "." + in.Sem.String() + "." + in.Scope.String()
	}
	for pc, in := range th.Code {
		fmt.Fprintf(b, "L%d_%d:\n", i, pc)
		if in.Shared {
			return nil, fmt.Errorf("shared memory")
		}
		switch in.Op {
		case memmodel.OpLoad:
			fmt.Fprintf(b, "\tld%s.global.u64 %s, %s;\n", sem(in), reg(in.Dst), addr(in.Loc))
		case memmodel.OpStore:
			fmt.Fprintf(b, "\tst%s.global.u64 %s, %s;\n", sem(in), addr(in.Loc), op(in.Args[0]))
		case memmodel.OpAtom:
			aop, ty := in.AtomOp, ".u64"
			arg := op(in.Args[0])
			switch aop {
			case "sub":
				aop = "add"
				fmt.Fprintf(b, "\tneg.s64 %%t0, %s;\n", arg)
				arg = "%t0"
			case "min", "max":
				ty = ".s64"
			case "cas", "exch", "and", "or", "xor":
				ty = ".b64"
			case "add":
			default:
				return nil, fmt.Errorf("atom.%s", aop)
			}
			if aop == "cas" {
				arg += ", " + op(in.Args[1])
			}
			dst := "%t1"
			if in.Dst != "" {
				dst = reg(in.Dst)
			}
			fmt.Fprintf(b, "\tatom%s.global.%s%s %s, %s, %s;\n", sem(in), aop, ty, dst, addr(in.Loc), arg)
		case memmodel.OpFence:
			fmt.Fprintf(b, "\tfence.%s.%s;\n", in.Sem, in.Scope)
		case memmodel.OpBarrier:
			bar := plan.at[[2]int{i, pc}]
			form := "sync"
			if in.Arrive {
				form = "arrive"
			}
			fmt.Fprintf(b, "\tbar.%s %d, %d;\n", form, bar.id, bar.count)
		case memmodel.OpLocal:
			switch in.AtomOp {
			case "mov":
				fmt.Fprintf(b, "\tmov.b64 %s, %s;\n", reg(in.Dst), op(in.Args[0]))
			case "add", "sub", "and", "or", "xor":
				ty := ".s64"
				if in.AtomOp != "add" && in.AtomOp != "sub" {
					ty = ".b64"
				}
				fmt.Fprintf(b, "\t%s%s %s, %s, %s;\n", in.AtomOp, ty, reg(in.Dst), op(in.Args[0]), op(in.Args[1]))
			case "mul":
				fmt.Fprintf(b, "\tmul.lo.s64 %s, %s, %s;\n", reg(in.Dst), op(in.Args[0]), op(in.Args[1]))
			default:
				return nil, fmt.Errorf("local %s", in.AtomOp)
			}
		case memmodel.OpBranch:
			a, c := op(in.Args[0]), op(in.Args[1])
			if in.Args[0].Reg == "" {
				fmt.Fprintf(b, "\tmov.b64 %%t2, %s;\n", a)
				a = "%t2"
			}
			fmt.Fprintf(b, "\tsetp.%s.s64 %%p1, %s, %s;\n\t@%%p1 bra L%d_%d;\n", in.Cond, a, c, i, in.Target)
		case memmodel.OpJump:
			fmt.Fprintf(b, "\tbra.uni L%d_%d;\n", i, in.Target)
		}
	}
	fmt.Fprintf(b, "L%d_%d:\n", i, len(th.Code))
	for _, r := range names {
		fmt.Fprintf(b, "\tst.global.u64 [%%base+%d], %s;\n", regBase+8*(i*regSlots+regs[r]), reg(r))
	}
	b.WriteString("\tret;\n")
	return regs, nil
}

// run runs the translated test once with seed and returns its final state
// (one value per observable), or an error (a hang, a fault).
func (k *kernelTest) run(seed uint64) ([]int64, error) {
	s := actor.NewScheduler(actor.Config{Seed: seed, MaxSteps: 200000})
	w, err := sim.NewWorld(s, sim.Config{World: k.world, Kernels: sim.Kernels{PTX: true, PlainYield: 1}})
	if err != nil {
		return nil, err
	}
	var out []int64
	var runErr error
	s.Go("host", func() { out, runErr = k.host(w) })
	if err := s.Run(); err != nil {
		return nil, err
	}
	return out, runErr
}

// host sets up memory, launches every GPU's kernel and reads the state.
func (k *kernelTest) host(w *sim.World) ([]int64, error) {
	const size = device.Granularity
	d0 := w.Device(0)
	h0, err := d0.CreatePhysical(size)
	if err != nil {
		return nil, err
	}
	fd, err := d0.ExportHandle(h0)
	if err != nil {
		return nil, err
	}
	ptrs := make([]device.Ptr, k.world)
	streams := make([]device.Stream, k.world)
	for g := range ptrs {
		d := w.Device(g)
		h := h0
		if g > 0 {
			f, err := w.Transfer(w.PID(0), fd, w.PID(g))
			if err != nil {
				return nil, err
			}
			if h, err = d.ImportHandle(f); err != nil {
				return nil, err
			}
		}
		p, err := d.Reserve(size)
		if err != nil {
			return nil, err
		}
		if err := d.Map(p, size, h); err != nil {
			return nil, err
		}
		if err := d.SetAccess(p, size); err != nil {
			return nil, err
		}
		ptrs[g] = p
		if streams[g], err = d.NewStream(); err != nil {
			return nil, err
		}
	}
	init := make([]byte, regBase)
	for i, l := range k.locs {
		binary.LittleEndian.PutUint64(init[8*i:], uint64(k.test.Program.Init[l]))
	}
	if err := d0.Write(streams[0], ptrs[0], init); err != nil {
		return nil, err
	}
	if err := d0.Synchronize(streams[0]); err != nil {
		return nil, err
	}
	for g, gl := range k.gpus {
		params := binary.LittleEndian.AppendUint64(nil, uint64(ptrs[g]))
		l := sim.PTXLaunch{Module: k.mod, Entry: gl.entry, Params: params, Grid: gl.grid, Block: gl.threads}
		if err := w.Device(g).(sim.PTXLauncher).LaunchPTX(streams[g], l); err != nil {
			return nil, err
		}
	}
	for g := range k.gpus {
		if err := w.Device(g).Synchronize(streams[g]); err != nil {
			return nil, err
		}
	}
	mem := make([]byte, regBase+8*regSlots*len(k.test.Program.Threads))
	if err := d0.Read(streams[0], mem, ptrs[0]); err != nil {
		return nil, err
	}
	out := make([]int64, len(k.test.Observables))
	for i, o := range k.test.Observables {
		off := 8 * slices.Index(k.locs, o.Name)
		if o.Thread >= 0 {
			r, ok := k.regs[o.Thread][o.Name]
			if !ok {
				out[i] = k.test.Program.Threads[o.Thread].Regs[o.Name]
				continue
			}
			off = regBase + 8*(o.Thread*regSlots+r)
		}
		out[i] = int64(binary.LittleEndian.Uint64(mem[off:]))
	}
	return out, nil
}

// kernelReach is what running a test as a kernel over seeds found.
type kernelReach struct {
	allowed, reached int
	forbidden        [][]int64
	outcomes         [][]int64 // observed
	exact            [][]int64 // allowed by the model
	missed           [][]int64 // allowed by the model, observed in no seed
	hangs            int       // runs that ended in a barrier deadlock, as the model's all do
}

// runKernel runs test as a kernel over seeds and compares what it
// observed with the exact model.
func runKernel(test *Test, seeds uint64) (*kernelReach, error) {
	k, err := translate(test)
	if err != nil {
		return nil, err
	}
	res, err := Run(test, memmodel.Options{})
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var got [][]int64
	hangs := 0
	for seed := uint64(0); seed < seeds; seed++ {
		o, err := k.run(seed)
		if errors.Is(err, ptx.ErrDeadlock) && len(res.Outcomes) == 0 {
			// Every run of the model waits forever at a barrier
			// (no final state), and so does the kernel.
			hangs++
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("seed %d: %w", seed, err)
		}
		if key := fmt.Sprint(o); !seen[key] {
			seen[key] = true
			got = append(got, o)
		}
	}
	forbidden, missed := Compare(res.Outcomes, got)
	return &kernelReach{allowed: len(res.Outcomes), reached: len(res.Outcomes) - len(missed), forbidden: forbidden, outcomes: got, exact: res.Outcomes, missed: missed, hangs: hangs}, nil
}

// kernelSeeds is how many seeds each test runs as a kernel by default.
const kernelSeeds = 150

// TestWeakShapesAsKernels: the weak outcomes the PTX model allows appear
// in kernel runs, in some seed; the forbidden ones in none.
func TestWeakShapesAsKernels(t *testing.T) {
	checkShapes(t, "PTX T\n{ x=0; y=0; }\n P0@cta 0,gpu 0 | P1@cta 1,gpu 0 ;\n", []shape{
		{"SB relaxed.sys", `
 st.relaxed.sys x, 1 | st.relaxed.sys y, 1 ;
 ld.relaxed.sys r0, y | ld.relaxed.sys r0, x ;
`, "P0:r0 == 0 /\\ P1:r0 == 0", true},
		{"SB release/acquire", `
 st.release.sys x, 1 | st.release.sys y, 1 ;
 ld.acquire.sys r0, y | ld.acquire.sys r0, x ;
`, "P0:r0 == 0 /\\ P1:r0 == 0", true},
		{"SB with fence.sc", `
 st.relaxed.sys x, 1 | st.relaxed.sys y, 1 ;
 fence.sc.sys        | fence.sc.sys        ;
 ld.relaxed.sys r0, y | ld.relaxed.sys r0, x ;
`, "P0:r0 == 0 /\\ P1:r0 == 0", false},
		{"MP relaxed", `
 st.relaxed.sys x, 1 | ld.relaxed.sys r0, y ;
 st.relaxed.sys y, 1 | ld.relaxed.sys r1, x ;
`, "P1:r0 == 1 /\\ P1:r1 == 0", true},
		{"MP release/acquire", `
 st.relaxed.sys x, 1 | ld.acquire.sys r0, y ;
 st.release.sys y, 1 | ld.relaxed.sys r1, x ;
`, "P1:r0 == 1 /\\ P1:r1 == 0", false},
		{"MP fences", `
 st.relaxed.sys x, 1 | ld.relaxed.sys r0, y ;
 fence.acq_rel.sys   | fence.acq_rel.sys   ;
 st.relaxed.sys y, 1 | ld.relaxed.sys r1, x ;
`, "P1:r0 == 1 /\\ P1:r1 == 0", false},
		{"MP release/acquire at cta scope across CTAs", `
 st.relaxed.gpu x, 1 | ld.acquire.cta r0, y ;
 st.release.cta y, 1 | ld.relaxed.gpu r1, x ;
`, "P1:r0 == 1 /\\ P1:r1 == 0", true},
		{"LB relaxed", `
 ld.relaxed.sys r0, x | ld.relaxed.sys r0, y ;
 st.relaxed.sys y, 1 | st.relaxed.sys x, 1 ;
`, "P0:r0 == 1 /\\ P1:r0 == 1", true},
		{"LB plain", `
 ld.weak r0, x | ld.weak r0, y ;
 st.weak y, 1  | st.weak x, 1  ;
`, "P0:r0 == 1 /\\ P1:r0 == 1", true},
		{"LB with data computed after the load", `
 ld.relaxed.sys r0, x | ld.relaxed.sys r0, y ;
 mov r1, 1           | mov r1, 1           ;
 st.relaxed.sys y, r1 | st.relaxed.sys x, r1 ;
`, "P0:r0 == 1 /\\ P1:r0 == 1", true},
		{"LB with a data dependency", `
 ld.relaxed.sys r0, x | ld.relaxed.sys r0, y ;
 st.relaxed.sys y, r0 | st.relaxed.sys x, r0 ;
`, "P0:r0 == 1 /\\ P1:r0 == 1", false},
		{"LB with fences", `
 ld.relaxed.sys r0, x | ld.relaxed.sys r0, y ;
 fence.acq_rel.sys   | fence.acq_rel.sys   ;
 st.relaxed.sys y, 1 | st.relaxed.sys x, 1 ;
`, "P0:r0 == 1 /\\ P1:r0 == 1", false},
		{"a read back in coherence order", `
 st.relaxed.sys x, 1 | ld.relaxed.sys r0, y ;
 st.relaxed.sys x, 2 | ld.relaxed.sys r1, x ;
 st.relaxed.sys y, 1 | ld.relaxed.sys r2, x ;
`, "P1:r0 == 1 /\\ P1:r1 == 1 /\\ P1:r2 == 2", true},
		{"CoRR violation", `
 st.relaxed.sys x, 1 | ld.relaxed.sys r0, y ;
 st.relaxed.sys x, 2 | ld.relaxed.sys r1, x ;
 st.relaxed.sys y, 1 | ld.relaxed.sys r2, x ;
`, "P1:r1 == 2 /\\ P1:r2 == 1", false},
		{"a read before the thread's own store in coherence order", `
 st.relaxed.sys x, 1 | st.relaxed.sys x, 3 ;
                     | ld.relaxed.sys r0, x ;
`, "P1:r0 == 1 /\\ x == 3", false},
	})
}

// TestStoreOrderAsKernels: two stores of a thread to different locations
// become visible in the other order in kernel runs unless a release or
// fence (with an acquire or fence on the other side) orders them: in the
// S shape (the clear-then-set handshake: the answer to the set lands
// before the clear) and 2+2W, and never against the thread's own order of
// stores to one location.
func TestStoreOrderAsKernels(t *testing.T) {
	checkShapes(t, "PTX T\n{ x=0; y=0; }\n P0@cta 0,gpu 0 | P1@cta 0,gpu 1 ;\n", []shape{
		{"S relaxed: the answer lands before the clear", `
 st.relaxed.sys x, 0 | ld.relaxed.sys r0, y ;
 st.relaxed.sys y, 1 | bne r0, 1, L1        ;
                     | st.relaxed.sys x, 1  ;
                     | L1:                  ;
`, "P1:r0 == 1 /\\ x == 0", true},
		{"S volatile", `
 st.volatile x, 0 | ld.volatile r0, y ;
 st.volatile y, 1 | bne r0, 1, L1     ;
                  | st.volatile x, 1  ;
                  | L1:               ;
`, "P1:r0 == 1 /\\ x == 0", true},
		{"S with a fence on the writer only", `
 st.relaxed.sys x, 0 | ld.relaxed.sys r0, y ;
 fence.sc.sys        | bne r0, 1, L1        ;
 st.relaxed.sys y, 1 | st.relaxed.sys x, 1  ;
                     | L1:                  ;
`, "P1:r0 == 1 /\\ x == 0", true},
		{"S with fences", `
 st.relaxed.sys x, 0 | ld.relaxed.sys r0, y ;
 fence.sc.sys        | bne r0, 1, L1        ;
 st.relaxed.sys y, 1 | fence.sc.sys         ;
                     | st.relaxed.sys x, 1  ;
                     | L1:                  ;
`, "P1:r0 == 1 /\\ x == 0", false},
		{"S release/acquire", `
 st.relaxed.sys x, 0 | ld.acquire.sys r0, y ;
 st.release.sys y, 1 | bne r0, 1, L1        ;
                     | st.relaxed.sys x, 1  ;
                     | L1:                  ;
`, "P1:r0 == 1 /\\ x == 0", false},
		{"S release/relaxed", `
 st.relaxed.sys x, 0 | ld.relaxed.sys r0, y ;
 st.release.sys y, 1 | bne r0, 1, L1        ;
                     | st.relaxed.sys x, 1  ;
                     | L1:                  ;
`, "P1:r0 == 1 /\\ x == 0", true},
		{"2+2W relaxed", `
 st.relaxed.sys x, 1 | st.relaxed.sys y, 1 ;
 st.relaxed.sys y, 2 | st.relaxed.sys x, 2 ;
`, "x == 1 /\\ y == 1", true},
		{"2+2W with fence.sc", `
 st.relaxed.sys x, 1 | st.relaxed.sys y, 1 ;
 fence.sc.sys        | fence.sc.sys        ;
 st.relaxed.sys y, 2 | st.relaxed.sys x, 2 ;
`, "x == 1 /\\ y == 1", false},
		{"CoWW of one thread", `
 st.relaxed.sys x, 1 | ld.relaxed.sys r0, y ;
 st.relaxed.sys x, 2 | st.relaxed.sys x, 3  ;
 st.relaxed.sys y, 1 |                      ;
`, "x == 1", false},
	})
	checkShapes(t, "PTX T\n{ x=0; y=0; z=0; }\n P0@cta 0,gpu 0 | P1@cta 0,gpu 1 | P2@cta 1,gpu 0 ;\n", []shape{
		{"S through a third thread, release/acquire", `
 st.relaxed.sys x, 0 | ld.acquire.sys r0, y | ld.acquire.sys r1, z ;
 st.release.sys y, 1 | bne r0, 1, L1        | bne r1, 1, L2        ;
                     | st.release.sys z, 1  | st.relaxed.sys x, 1  ;
                     | L1:                  | L2:                  ;
`, "P1:r0 == 1 /\\ P2:r1 == 1 /\\ x == 0", false},
	})
}

// TestBarrierShapesAsKernels: named barriers order what the model says
// they order, in kernel runs: a strong load after bar.sync reads what the
// threads that arrived stored (the weak reads learn the phase), and one
// after bar.arrive, or after another barrier, may read the old value.
func TestBarrierShapesAsKernels(t *testing.T) {
	checkShapes(t, "PTX T\n{ x=0; y=0; }\n P0@cta 0,gpu 0 | P1@cta 0,gpu 0 ;\n", []shape{
		{"MP, bar.arrive then bar.sync", `
 st.relaxed.gpu x, 1 | bar.cta.sync 1       ;
 bar.cta.arrive 1    | ld.relaxed.gpu r0, x ;
`, "P1:r0 == 0", false},
		{"MP, the consumer only arrives", `
 st.relaxed.gpu x, 1 | bar.cta.arrive 1     ;
 bar.cta.arrive 1    | ld.relaxed.gpu r0, x ;
`, "P1:r0 == 0", true},
		{"MP, two barriers", `
 st.relaxed.gpu x, 1 | bar.cta.sync 2       ;
 bar.cta.sync 1      | ld.relaxed.gpu r0, x ;
`, "P1:r0 == 0", true},
		{"SB across a barrier of both", `
 st.relaxed.gpu x, 1  | st.relaxed.gpu y, 1  ;
 bar.cta.sync 1, 1, 2 | bar.cta.sync 1, 1, 2 ;
 ld.relaxed.gpu r0, y | ld.relaxed.gpu r0, x ;
`, "P0:r0 == 0 \\/ P1:r0 == 0", false},
	})
}

// shape is a litmus test's threads and an outcome the model allows or
// forbids.
type shape struct {
	name, body, cond string
	allowed          bool
}

// checkShapes runs each shape (head + body) as a kernel over kernelSeeds
// seeds: its outcome must be observed in some seed exactly when the exact
// model allows it, and nothing the model forbids may be.
func checkShapes(t *testing.T, head string, shapes []shape) {
	t.Helper()
	for _, c := range shapes {
		test, err := Parse(head + c.body + "exists (" + c.cond + ")")
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		r, err := runKernel(test, kernelSeeds)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		for _, o := range r.forbidden {
			t.Errorf("%s: a kernel run reached %s, which the PTX model forbids", c.name, test.FormatOutcome(o))
		}
		hit, model := false, false
		for _, o := range r.outcomes {
			hit = hit || test.Satisfies(o)
		}
		for _, o := range r.exact {
			model = model || test.Satisfies(o)
		}
		if model != c.allowed {
			t.Fatalf("%s: the PTX model allows %s: %v; the test says %v", c.name, c.cond, model, c.allowed)
		}
		if hit != c.allowed {
			t.Errorf("%s: outcome %s observed in %d seeds: %v, want %v (observed %v)", c.name, c.cond, kernelSeeds, hit, c.allowed, r.outcomes)
		}
	}
}

// corpusAsKernels runs every test of a verdict file as a kernel over
// seeds: every final state observed must be one the exact model allows;
// it logs how many of the allowed outcomes kernel runs reach.
func corpusAsKernels(t *testing.T, csvPath string, seeds uint64) {
	t.Helper()
	f, err := os.Open(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	verdicts, err := ReadVerdicts(f)
	if err != nil {
		t.Fatal(err)
	}
	ran, allowed, reached := 0, 0, 0
	var skipped, hung, unreached []string
	for _, v := range verdicts {
		test, err := ParseFile(filepath.Join(filepath.Dir(csvPath), v.Path))
		if err != nil {
			t.Fatal(err)
		}
		r, err := runKernel(test, seeds)
		if err != nil {
			skipped = append(skipped, v.Path+" ("+err.Error()+")")
			continue
		}
		ran++
		allowed += r.allowed
		reached += r.reached
		if r.hangs > 0 {
			hung = append(hung, v.Path)
		}
		for _, o := range r.missed {
			unreached = append(unreached, v.Path+": "+test.FormatOutcome(o))
		}
		for _, o := range r.forbidden {
			t.Errorf("%s: a kernel run reached %s, which the PTX model forbids", v.Path, test.FormatOutcome(o))
		}
	}
	if ran == 0 {
		t.Fatalf("%s: no test translated", csvPath)
	}
	t.Logf("%d of %d tests ran as kernels, %d seeds each: %d of %d allowed outcomes reached, none forbidden", ran, len(verdicts), seeds, reached, allowed)
	if len(hung) > 0 {
		t.Logf("%d tests have no final state in the model (every run waits forever at a barrier), and every kernel run ends in a barrier deadlock: %s", len(hung), strings.Join(hung, " "))
	}
	for _, s := range skipped {
		t.Logf("not translated: %s", s)
	}
	for _, s := range unreached {
		t.Logf("unreached: %s", s)
	}
}

// TestProjectLitmusAsKernels runs the project's own litmus tests (fence
// shortcuts A to D, the weak shapes, shared memory) as kernels.
func TestProjectLitmusAsKernels(t *testing.T) {
	corpusAsKernels(t, filepath.Join("testdata", "expected.csv"), 40)
}

// TestCorpusAsKernels runs every test of the shared corpus (when beside
// the repository) as a kernel, 12 seeds each (300 in the long sweep).
func TestCorpusAsKernels(t *testing.T) {
	csv := filepath.Join(sharedCorpus, "expected.csv")
	if _, err := os.Stat(csv); err != nil {
		t.Skipf("no shared litmus corpus at %s (a fresh clone has none)", sharedCorpus)
	}
	seeds := uint64(12)
	if longtest.Enabled() {
		seeds = 300
	}
	corpusAsKernels(t, csv, seeds)
}
