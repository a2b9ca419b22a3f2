package sim

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/device/sim/ptx"
)

// TestResidentMeasuredOnH200: the blocks an SM holds, as
// cudaOccupancyMaxActiveBlocksPerMultiprocessor reported them on an H200
// (testdata/occupancy/h200.txt, printed by testdata/occupancy/occ.cu for
// kernels of 8 to 166 registers a thread, static shared memory up to 41088
// bytes and dynamic up to 227 KiB), each computed here from the threads,
// registers and shared memory the line gives.
func TestResidentMeasuredOnH200(t *testing.T) {
	f, err := os.Open("testdata/occupancy/h200.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan()
	var sms, threads, blocks, regs, regsBlock, smem, optin, reserved int
	var name string
	if _, err := fmt.Sscanf(sc.Text(), "NVIDIA H200 sms=%d threads/sm=%d blocks/sm=%d regs/sm=%d regs/block=%d smem/sm=%d smem/block optin=%d reserved/block=%d",
		&sms, &threads, &blocks, &regs, &regsBlock, &smem, &optin, &reserved); err != nil {
		t.Fatalf("device line %q: %v", sc.Text(), err)
	}
	if got, want := []int{sms, threads, blocks, regs, regsBlock, smem, optin, reserved},
		[]int{H200SMs, H200ThreadsPerSM, H200BlocksPerSM, H200RegistersPerSM, H200RegistersPerSM, H200SharedPerSM, H200SharedPerBlock, H200ReservedShared}; !slices.Equal(got, want) {
		t.Errorf("the H200's limits: measured %v, the defaults are %v", got, want)
	}
	n := 0
	for sc.Scan() {
		var block, dyn, r, static, want int
		line := sc.Text()
		if _, err := fmt.Sscanf(line, "%s block=%d dyn=%d regs=%d static=%d -> %d", &name, &block, &dyn, &r, &static, &want); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		n++
		got, err := Occupancy{SMs: 1, Registers: r}.Resident(ptx.Resources{StaticShared: static}, block, dyn)
		switch {
		case want == 0 && err == nil:
			t.Errorf("%s: %d an SM, want the launch refused", line, got.PerSM)
		case want > 0 && (err != nil || got.PerSM != want || got.Blocks != want):
			t.Errorf("%s: %d an SM (%v), want %d", line, got.PerSM, err, want)
		}
	}
	if n < 40 {
		t.Errorf("%d measured lines, want the 40 or more of the file", n)
	}
}

// TestResident: the residency of launches computed by hand from the rules
// of CUDA's occupancy calculator for sm_90, with what bounds it.
func TestResident(t *testing.T) {
	for _, c := range []struct {
		name    string
		occ     Occupancy
		res     ptx.Resources
		threads int
		dyn     int
		perSM   int
		blocks  int
		why     string
	}{
		// 64 warps an SM, 3 a block: 21.
		{"threads", Occupancy{SMs: 2}, ptx.Resources{}, 96, 0, 21, 42, "bounded by threads (3 warps a block of 64 an SM)"},
		// 32 blocks of 1 warp, also the thread limit at 2048/32 = 64 warps: no.
		{"blocks", Occupancy{SMs: H200SMs}, ptx.Resources{}, 32, 0, 32, 32 * H200SMs, "bounded by the limit of 32 blocks an SM"},
		// 64 x 32 = 2048 a warp; 16384 a sub-partition hold 8 warps, 32
		// an SM; a block of 1024 threads is 32 warps: 1. Threads allow 2.
		{"maxnreg", Occupancy{SMs: 4}, ptx.Resources{MaxNReg: 64}, 1024, 0, 1, 4, "registers (64 a thread (.maxnreg), 65536 a block of 65536 an SM)"},
		// 40 given: 1280 a warp, 16384/1280 = 12 warps a sub-partition, 48
		// an SM, 8 warps a block: 6 (not 65536/(40*256) = 6.4, the same
		// here; at 4 warps a block: 12, where 65536/(40*128) = 12.8).
		{"given registers", Occupancy{SMs: 1, Registers: 40}, ptx.Resources{MaxNReg: 200}, 256, 0, 6, 6, "registers (40 a thread (given)"},
		// 41088 static + 1024 reserved = 42112 (a multiple of 128): 5 in
		// 233472.
		{"static shared", Occupancy{SMs: 2}, ptx.Resources{StaticShared: 41088}, 64, 0, 5, 10, "shared memory (42112 bytes a block of 233472 an SM)"},
		// 100000 + 1000 + 1024 = 102024, rounded to 102144: 2.
		{"dynamic shared", Occupancy{SMs: 3}, ptx.Resources{StaticShared: 1000}, 128, 100000, 2, 6, "shared memory (102144 bytes a block"},
		{"given limit", Occupancy{ResidentBlocks: 7}, ptx.Resources{}, 64, 0, 32, 7, "the given limit of 7 resident blocks"},
		{"given limit below the SMs'", Occupancy{SMs: 1, ResidentBlocks: 3}, ptx.Resources{}, 64, 0, 32, 3, "the given limit of 3"},
		{"SMs below the given limit", Occupancy{SMs: 1, ResidentBlocks: 3}, ptx.Resources{StaticShared: 100 << 10}, 32, 0, 2, 2, "1 SM x 2 blocks, bounded by shared memory"},
		// Per-SM limits given: 1024 threads an SM and 16 blocks.
		{"smaller SM", Occupancy{SMs: 1, ThreadsPerSM: 1024, BlocksPerSM: 16}, ptx.Resources{}, 32, 0, 16, 16, "the limit of 16 blocks an SM"},
		{"smaller SM threads", Occupancy{SMs: 1, ThreadsPerSM: 1024}, ptx.Resources{}, 256, 0, 4, 4, "threads (8 warps a block of 32 an SM)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := c.occ.Resident(c.res, c.threads, c.dyn)
			if err != nil {
				t.Fatal(err)
			}
			if r.PerSM != c.perSM || r.Blocks != c.blocks || !strings.Contains(r.Why(), c.why) {
				t.Errorf("%d an SM, %d in all, %q; want %d, %d, %q", r.PerSM, r.Blocks, r.Why(), c.perSM, c.blocks, c.why)
			}
		})
	}
	for _, c := range []struct {
		name    string
		occ     Occupancy
		res     ptx.Resources
		threads int
		dyn     int
		want    string
	}{
		{"nothing given", Occupancy{}, ptx.Resources{}, 64, 0, "neither a multiprocessor count nor a limit"},
		{"negative", Occupancy{SMs: -1}, ptx.Resources{}, 64, 0, "a negative limit"},
		{"maxntid", Occupancy{SMs: 1}, ptx.Resources{MaxNTid: 256}, 512, 0, "more than the entry's .maxntid (256)"},
		{"reqntid", Occupancy{SMs: 1}, ptx.Resources{ReqNTid: 128}, 64, 0, "not the entry's .reqntid (128)"},
		{"shared", Occupancy{SMs: 1}, ptx.Resources{StaticShared: 1024}, 64, 227 << 10, "233472 bytes of shared memory a block (1024 static, 232448 dynamic), more than a block may have (232448)"},
		{"registers a thread", Occupancy{SMs: 1, Registers: 256}, ptx.Resources{}, 32, 0, "256 registers a thread (given), more than a thread may have (255)"},
		// 72 x 32 = 2304, rounded to 2560 a warp, x 32 warps > 65536.
		{"registers a block", Occupancy{SMs: 1}, ptx.Resources{MaxNReg: 72}, 1024, 0, "72 registers a thread (.maxnreg) x 1024 threads"},
		{"no block fits", Occupancy{SMs: 1, SharedPerSM: 4096}, ptx.Resources{StaticShared: 8192}, 64, 0, "a block does not fit on a multiprocessor"},
	} {
		if _, err := c.occ.Resident(c.res, c.threads, c.dyn); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.want)
		}
	}
}

// gridBarrierPTX: thread 0 of every block takes a ticket (the count of
// blocks that arrived before it) from word 0 of its first parameter,
// stores it in word 1+ctaid, and, when its block is not below the second
// parameter (from), spins until every block of the grid arrived: a
// software grid barrier of blocks from to the last. 1 KiB of static shared
// memory.
const gridBarrierPTX = `
.version 8.0
.target sm_90
.address_size 64
.visible .entry gridbar(.param .u64 gridbar_param_0, .param .u32 gridbar_param_1)
{
	.shared .align 4 .b8 scratch[1024];
	.reg .pred %p<3>;
	.reg .b32 %r<8>;
	.reg .b64 %rd<4>;
	ld.param.u64 %rd1, [gridbar_param_0];
	cvta.to.global.u64 %rd1, %rd1;
	mov.u32 %r1, %tid.x;
	setp.ne.u32 %p1, %r1, 0;
	@%p1 bra DONE;
	atom.global.add.u32 %r2, [%rd1], 1;
	mov.u32 %r3, %ctaid.x;
	mul.wide.u32 %rd2, %r3, 4;
	add.s64 %rd3, %rd1, %rd2;
	st.global.u32 [%rd3+4], %r2;
	ld.param.u32 %r5, [gridbar_param_1];
	setp.lt.u32 %p2, %r3, %r5;
	@%p2 bra DONE;
	mov.u32 %r4, %nctaid.x;
WAIT:
	ld.acquire.gpu.global.u32 %r6, [%rd1];
	setp.lt.u32 %p1, %r6, %r4;
	@%p1 bra WAIT;
DONE:
	ret;
}
`

// runGridBarrier launches gridbar with grid blocks of 32 threads, of which
// blocks from to the last wait for every block, and shared bytes of
// dynamic shared memory on a device of one rank, with occ as its occupancy
// (nil: none), and returns the tickets the blocks took (in block order)
// and the launch's error.
func runGridBarrier(t *testing.T, occ *Occupancy, grid, shared, from int, seed uint64) ([]uint32, error) {
	t.Helper()
	tickets := make([]uint32, grid)
	g := granuleLaunch{src: gridBarrierPTX, entry: "gridbar", grid: grid, block: 32, shared: shared, occupancy: occ,
		zeroed: uint64(4 + 4*grid), extra: binary.LittleEndian.AppendUint32(nil, uint32(from)),
		after: func(d device.Device, st device.Stream, p device.Ptr) error {
			if err := d.Synchronize(st); err != nil {
				return err
			}
			b := make([]byte, 4*grid)
			if err := d.Read(st, b, p+4); err != nil {
				return err
			}
			for i := range tickets {
				tickets[i] = binary.LittleEndian.Uint32(b[4*i:])
			}
			return nil
		}}
	_, err := g.run(t, seed)
	return tickets, err
}

// TestGridBarrierHangsOnlyWithOccupancy: a grid of 3 blocks that meet at a
// software grid barrier finishes when every block is resident (no
// occupancy, or one that holds them all: 2 SMs of 2 blocks, 3 given), and
// hangs, as an
// [*OccupancyError] naming the residency and the blocks, when only 2 can
// be resident: by a given limit, or by shared memory (1 KiB static, 100
// KiB dynamic and 1 KiB reserved a block: 2 in an SM's 228 KiB).
func TestGridBarrierHangsOnlyWithOccupancy(t *testing.T) {
	for _, occ := range []*Occupancy{nil, {SMs: 2}, {ResidentBlocks: 3}} {
		if _, err := runGridBarrier(t, occ, 3, 100<<10, 0, 1); err != nil {
			t.Errorf("occupancy %+v: %v", occ, err)
		}
	}
	for _, c := range []struct {
		occ *Occupancy
		why string
	}{
		{&Occupancy{ResidentBlocks: 2}, "the given limit of 2 resident blocks"},
		{&Occupancy{SMs: 1}, "1 SM x 2 blocks, bounded by shared memory (104448 bytes a block of 233472 an SM)"},
	} {
		for seed := uint64(1); seed <= 3; seed++ {
			_, err := runGridBarrier(t, c.occ, 3, map[bool]int{true: 0, false: 100 << 10}[c.occ.SMs == 0], 0, seed)
			var oe *OccupancyError
			if !errors.As(err, &oe) {
				t.Fatalf("occupancy %+v seed %d: %v, want an *OccupancyError", *c.occ, seed, err)
			}
			want := "blocks 0-1 (resident) wait for block 2, which never started: 2 of the grid's 3 blocks can be resident at once (" + c.why + ")"
			if oe.Started != 2 || !slices.Equal(oe.Hung, []int{0, 1}) || oe.Summary() != want {
				t.Errorf("occupancy %+v seed %d: started %d, hung %v: %q\nwant %q", *c.occ, seed, oe.Started, oe.Hung, oe.Summary(), want)
			}
			var se *SpinError
			if !errors.As(err, &se) || se.Line == 0 {
				t.Errorf("occupancy %+v seed %d: no spin in %v", *c.occ, seed, err)
			}
		}
	}
}

// TestExitedBlocksLeaveTheirPlace: blocks 0 and 1 of 5 count in and exit,
// blocks 2 to 4 wait for all 5; with 2 resident, blocks 2 and 3 take the
// places 0 and 1 left and hang, waiting for block 4, which never starts.
func TestExitedBlocksLeaveTheirPlace(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		_, err := runGridBarrier(t, &Occupancy{ResidentBlocks: 2}, 5, 0, 2, seed)
		var oe *OccupancyError
		if !errors.As(err, &oe) {
			t.Fatalf("seed %d: %v, want an *OccupancyError", seed, err)
		}
		want := "blocks 2-3 (resident) wait for block 4, which never started: 2 of the grid's 5 blocks can be resident at once " +
			"(the given limit of 2 resident blocks); 2 blocks exited before, each leaving its place to the next"
		if oe.Summary() != want || oe.Started != 4 || oe.Exited != 2 {
			t.Errorf("seed %d: %q (started %d, exited %d)\nwant %q", seed, oe.Summary(), oe.Started, oe.Exited, want)
		}
	}
	// Without the occupancy the same grid finishes.
	if _, err := runGridBarrier(t, nil, 5, 0, 2, 1); err != nil {
		t.Errorf("every block resident: %v", err)
	}
}

// TestBlocksStartInOrder: with one block resident at a time, the blocks
// run one after the other in block order (their tickets are their
// indices), and with 2 resident every block still runs; a grid that waits
// for no other block finishes under any residency.
func TestBlocksStartInOrder(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		tickets, err := runGridBarrier(t, &Occupancy{ResidentBlocks: 1}, 5, 0, 5, seed)
		if err != nil || !slices.Equal(tickets, []uint32{0, 1, 2, 3, 4}) {
			t.Errorf("seed %d: tickets %v (%v), want 0 to 4 in block order", seed, tickets, err)
		}
		tickets, err = runGridBarrier(t, &Occupancy{ResidentBlocks: 2}, 5, 0, 5, seed)
		slices.Sort(tickets)
		if err != nil || !slices.Equal(tickets, []uint32{0, 1, 2, 3, 4}) {
			t.Errorf("seed %d, 2 resident: tickets %v (%v), want each of 0 to 4 once", seed, tickets, err)
		}
	}
}

// TestLaunchRefusedByOccupancy: a launch whose block cannot fit on a
// multiprocessor fails when launched, naming why.
func TestLaunchRefusedByOccupancy(t *testing.T) {
	_, err := runGridBarrier(t, &Occupancy{SMs: 1}, 2, 227<<10, 0, 1)
	if err == nil || !strings.Contains(err.Error(), "launch gridbar: 233472 bytes of shared memory a block (1024 static, 232448 dynamic)") {
		t.Errorf("%v, want the launch refused for its shared memory", err)
	}
}
