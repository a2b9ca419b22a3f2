package conformance

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/symmem/symmem/actor/store"
	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/oracle"
	"github.com/symmem/symmem/rank"
	"github.com/symmem/symmem/simjob"
	"github.com/symmem/symmem/workload"
)

// intraNodeUsage ports the reference test: bf16 sums of 4 KiB, 512 KiB and
// 10 MiB use the service (counter 1, 2, 3) with the right result; avg and
// 10 MiB + 2 bytes do not; algorithm none is refused. Ranks sharing a
// device (a world larger than the GPU count) must be declined instead, and
// then the service refuses to run.
func intraNodeUsage(seed uint64) rank.Program {
	return func(r *rank.Rank) error {
		c := r.NewIntraNodeComm(rank.IntraNodeOptions{Enabled: true})
		if !c.Rendezvous() {
			why := c.Declined()
			if !strings.Contains(why, "share device") {
				return fmt.Errorf("intra-node comm refused a fully connected host: %s", why)
			}
			t, err := r.Empty(1024, device.BFloat16)
			if err != nil {
				return err
			}
			defer r.FreeTensor(t)
			if c.SelectAlgo(t, device.Sum) != rank.AlgoNone || c.AllReduce(t, rank.AlgoOneShot) == nil {
				return errors.New("intra-node comm declined ranks sharing a device, then offered or ran an all-reduce")
			}
			return nil
		}
		defer c.Close()
		for i, n := range []uint64{4 << 10, 512 << 10, 10 << 20} {
			inputs := workload.Spec{World: r.World(), Bytes: n, DType: device.BFloat16, Seed: seed + uint64(i)}.Inputs()
			t, err := r.Empty(n/2, device.BFloat16)
			if err != nil {
				return err
			}
			if err := r.Write(t, inputs[r.ID()]); err != nil {
				return err
			}
			algo := c.SelectAlgo(t, device.Sum)
			want := rank.AlgoOneShot
			if n > rank.OneShotMaxBytes {
				want = rank.AlgoTwoShot
			}
			if algo != want {
				return fmt.Errorf("%d bytes: selected %v, want %v", n, algo, want)
			}
			if err := c.AllReduce(t, algo); err != nil {
				return err
			}
			if c.Uses() != i+1 {
				return fmt.Errorf("after %d bytes: uses = %d, want %d", n, c.Uses(), i+1)
			}
			got, err := r.Read(t)
			if err != nil {
				return err
			}
			ref, err := oracle.AllReduce(device.BFloat16, device.Sum, inputs)
			if err != nil {
				return err
			}
			if !bytes.Equal(got, ref) {
				return fmt.Errorf("%d bytes: result differs from the reference", n)
			}
			if err := r.FreeTensor(t); err != nil {
				return err
			}
		}
		small, err := r.Empty(2048, device.BFloat16)
		if err != nil {
			return err
		}
		defer r.FreeTensor(small)
		if a := c.SelectAlgo(small, device.Avg); a != rank.AlgoNone {
			return fmt.Errorf("avg selected %v", a)
		}
		odd := rank.Tensor{Ptr: small.Ptr, DType: device.BFloat16, Numel: (10<<20 + 2) / 2}
		if a := c.SelectAlgo(odd, device.Sum); a != rank.AlgoNone {
			return fmt.Errorf("10 MiB + 2 bytes selected %v", a)
		}
		if err := c.AllReduce(small, rank.AlgoNone); err == nil {
			return errors.New("all-reduce with algorithm none accepted")
		}
		if c.Uses() != 3 {
			return fmt.Errorf("uses = %d after refused calls, want 3", c.Uses())
		}
		return nil
	}
}

// ExpectErr checks that err is non-nil and mentions every fragment; rank
// programs and tests use it to check refusals.
func ExpectErr(what string, err error, fragments ...string) error {
	if err == nil {
		return fmt.Errorf("%s: accepted, want an error", what)
	}
	for _, f := range fragments {
		if !strings.Contains(err.Error(), f) {
			return fmt.Errorf("%s: error %q does not mention %q", what, err, f)
		}
	}
	return nil
}

// badInputs: each invalid argument gives a specific error, and a valid
// all-reduce right after still works.
func badInputs(r *rank.Rank) error {
	const numel = 1024
	buf, h, err := rendezvousWorld(r, numel*4)
	if err != nil {
		return err
	}
	defer r.Free(buf)
	in := rank.Tensor{Ptr: buf, DType: device.Float32, Numel: numel}
	plain, err := r.Empty(numel, device.Float32)
	if err != nil {
		return err
	}
	defer r.FreeTensor(plain)
	valid := func(step string) error {
		out, err := r.OneShotAllReduce(in, device.Sum, rank.WorldGroup)
		if err != nil {
			return fmt.Errorf("valid all-reduce after %s: %w", step, err)
		}
		return r.FreeTensor(out)
	}
	w := h.WorldSize()
	checks := []struct {
		name string
		err  error
		frag []string
	}{
		{"misaligned offset", r.TwoShotAllReduce(rank.Tensor{Ptr: buf.Add(2), DType: device.BFloat16, Numel: 4}, device.Sum, rank.WorldGroup), []string{"offset of 2 bytes", "multiple of 4"}},
		{"misaligned size", r.TwoShotAllReduce(rank.Tensor{Ptr: buf, DType: device.BFloat16, Numel: 3}, device.Sum, rank.WorldGroup), []string{"size of 6 bytes"}},
		{"wrong dtype", r.TwoShotAllReduce(rank.Tensor{Ptr: buf, DType: device.DType(9), Numel: 4}, device.Sum, rank.WorldGroup), []string{"unsupported dtype"}},
		{"wrong op", r.TwoShotAllReduce(in, device.ReduceOp(7), rank.WorldGroup), []string{"unsupported reduce op"}},
		{"size above the buffer", r.TwoShotAllReduce(rank.Tensor{Ptr: buf, DType: device.Float32, Numel: numel + 4}, device.Sum, rank.WorldGroup), []string{"not a symmetric allocation"}},
		{"non-symmetric pointer", r.TwoShotAllReduce(plain, device.Sum, rank.WorldGroup), []string{"not a symmetric allocation"}},
		{"unknown group", r.TwoShotAllReduce(in, device.Sum, "nope"), []string{`unknown group "nope"`}},
		{"output of the wrong size", r.OneShotAllReduceOut(in, device.Sum, rank.WorldGroup, rank.Tensor{Ptr: plain.Ptr, DType: device.Float32, Numel: 3}), []string{"does not match"}},
		{"channel out of range", h.Barrier(1<<20, 0), []string{"channel"}},
		{"rank out of range", h.PutSignal(w, 0, 0), []string{fmt.Sprintf("rank %d", w)}},
	}
	for _, c := range checks {
		if err := ExpectErr(c.name, c.err, c.frag...); err != nil {
			return err
		}
		if err := valid(c.name); err != nil {
			return err
		}
	}
	if err := ExpectErr("free of a plain tensor as symmetric", r.Free(plain.Ptr), "not a symmetric allocation"); err != nil {
		return err
	}
	if _, err := r.Rendezvous(plain.Ptr, rank.WorldGroup); !errors.Is(err, rank.ErrNotSymmetric) {
		return fmt.Errorf("rendezvous of a plain pointer: %v", err)
	}
	if _, err := r.Alloc(0); err == nil {
		return errors.New("alloc of 0 bytes accepted")
	}
	if _, err := r.Alloc(^uint64(0)); err == nil {
		return errors.New("alloc of 2^64-1 bytes accepted")
	}
	other, err := r.Alloc(64)
	if err != nil {
		return err
	}
	if err := r.Free(other); err != nil {
		return err
	}
	if err := r.Free(other); !errors.Is(err, rank.ErrFreed) {
		return fmt.Errorf("double free: %v, want ErrFreed", err)
	}
	if _, err := r.Rendezvous(other, rank.WorldGroup); !errors.Is(err, rank.ErrFreed) {
		return fmt.Errorf("use after free: %v, want ErrFreed", err)
	}
	return valid("the pointer checks")
}

// persistentAllocID: the same id gives the same address after free; an id
// still alive is refused, and so is the id with another size than its
// first (smaller or larger, the error naming both).
func persistentAllocID(r *rank.Rank) error {
	a, err := r.AllocID(4096, "weights")
	if err != nil {
		return err
	}
	if _, err := r.AllocID(4096, "weights"); err == nil || !strings.Contains(err.Error(), "still alive") {
		return fmt.Errorf("second alloc of a live id: %v", err)
	}
	if err := r.Free(a); err != nil {
		return err
	}
	for _, size := range []uint64{1024, 4092, 4100, 1 << 20} {
		_, err := r.AllocID(size, "weights")
		if err == nil || !strings.Contains(err.Error(), "4096") || !strings.Contains(err.Error(), fmt.Sprint(size)) {
			return fmt.Errorf("id first allocated with 4096 bytes re-allocated with %d: %v, want an error naming both sizes", size, err)
		}
	}
	b, err := r.AllocID(4096, "weights")
	if err != nil {
		return err
	}
	defer r.Free(b)
	if a != b {
		return fmt.Errorf("id re-allocated at %v, first at %v", b, a)
	}
	if n, err := r.AllocSize(b); err != nil || n != 4096 {
		return fmt.Errorf("alloc size %d (%v), want 4096", n, err)
	}
	return nil
}

// simConformance: for seeded specs over every dtype, op and algorithm, the
// rank's result equals what the simulator gives the same rank, bitwise. On
// the simulator itself it compares with the kernels' reference instead.
func simConformance(seed uint64) rank.Program {
	return func(r *rank.Rank) error {
		sizes := []uint64{256, 12<<10 + 4, 300 << 10}
		offsets := []uint64{0, 4, 16}
		i := 0
		for _, dt := range []device.DType{device.Float32, device.BFloat16, device.Float16} {
			for _, op := range []device.ReduceOp{device.Sum, device.Avg, device.Max, device.Min} {
				for _, algo := range []workload.Algo{workload.OneShot, workload.TwoShot, workload.LowLatency} {
					s := workload.Spec{World: r.World(), Bytes: sizes[i%3], DType: dt, Op: op, Algo: algo,
						Offset: offsets[(i/3)%3], Seed: seed + uint64(i)}
					i++
					inputs := s.Inputs()
					got := make([]workload.RankResult, s.World)
					if err := s.Program(inputs, got)(r); err != nil {
						return fmt.Errorf("%+v: %w", s, err)
					}
					var want []byte
					if r.Runtime().Simulated() {
						var err error
						if want, err = oracle.AllReduce(s.DType, s.Op, inputs); err != nil {
							return err
						}
					} else {
						sim := make([]workload.RankResult, s.World)
						res, err := simjob.Simulate(simjob.Config{World: s.World, Seed: s.Seed}, s.Program(inputs, sim))
						if err == nil {
							err = res.Err()
						}
						if err != nil {
							return fmt.Errorf("simulating %+v: %w", s, err)
						}
						want = sim[r.ID()].Output
					}
					if !bytes.Equal(got[r.ID()].Output, want) {
						return fmt.Errorf("%v %v %v %d bytes offset %d: rank %d differs from the simulator",
							s.DType, s.Op, s.Algo, s.Bytes, s.Offset, r.ID())
					}
				}
			}
		}
		return nil
	}
}

// usage is what a leak check compares.
type usage struct {
	freeMem uint64
	fds     int
}

func measure(r *rank.Rank) (usage, error) {
	var u usage
	if mi, ok := r.Device().(device.MemInfo); ok {
		free, _, err := mi.MemInfo()
		if err != nil {
			return u, err
		}
		u.freeMem = free
	}
	if fc, ok := r.Device().(device.FDCounter); ok {
		u.fds = fc.OpenFDs()
	} else {
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			return u, err
		}
		u.fds = len(ents)
	}
	return u, nil
}

// leaks: after cycles of alloc / rendezvous / all-reduce / free, the
// device's free memory and the open fds are back where they started.
// Ranks line up on Store barriers around each measurement so no rank is
// mid-operation (ranks of one process share the fd table).
func leaks(cycles int) rank.Program {
	return func(r *rank.Rank) error {
		all := make([]int, r.World())
		for i := range all {
			all[i] = i
		}
		ex, err := store.NewExchange(r.Store(), "leaks", store.Group{Name: "world", Ranks: all}, r.ID())
		if err != nil {
			return err
		}
		cycle := func() error {
			p, err := r.Alloc(64 << 10)
			if err != nil {
				return err
			}
			in := rank.Tensor{Ptr: p, DType: device.BFloat16, Numel: 32 << 10}
			if err := r.TwoShotAllReduce(in, device.Sum, rank.WorldGroup); err != nil {
				return err
			}
			out, err := r.OneShotAllReduce(in, device.Sum, rank.WorldGroup)
			if err != nil {
				return err
			}
			if err := r.FreeTensor(out); err != nil {
				return err
			}
			return r.Free(p)
		}
		if err := cycle(); err != nil { // warm up lazily created state
			return err
		}
		// Ranks measure one at a time: ranks of one process share its fd
		// table, and counting it opens a directory.
		at := func() (u usage, err error) {
			for turn := range r.World() {
				if err := ex.Barrier(); err != nil {
					return usage{}, err
				}
				if turn == r.ID() {
					if u, err = measure(r); err != nil {
						return u, err
					}
				}
			}
			return u, ex.Barrier()
		}
		before, err := at()
		if err != nil {
			return err
		}
		for i := range cycles {
			if err := cycle(); err != nil {
				return fmt.Errorf("cycle %d: %w", i, err)
			}
		}
		after, err := at()
		if err != nil {
			return err
		}
		if after != before {
			return fmt.Errorf("after %d cycles: free device memory %d -> %d bytes, open fds %d -> %d",
				cycles, before.freeMem, after.freeMem, before.fds, after.fds)
		}
		return nil
	}
}
