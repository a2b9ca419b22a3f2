package rank_test

import (
	"fmt"
	"time"

	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/kernels"
	"github.com/symmem/symmem/rank"
	"github.com/symmem/symmem/simjob"
)

// fill returns n float32 elements of value v, encoded.
func fill(n int, v float32) []byte {
	vals := make([]float32, n)
	for i := range vals {
		vals[i] = v
	}
	b, _ := kernels.Encode(device.Float32, vals)
	return b
}

// first decodes a float32 tensor's bytes and returns its first element.
func first(b []byte) float32 {
	vals, _ := kernels.Decode(device.Float32, b)
	return vals[0]
}

// Rendezvous gives each rank a handle on every peer's buffer and signal
// pad: rank 1 writes into its own buffer, signals rank 0, and rank 0 reads
// rank 1's buffer once the signal arrived.
func ExampleRank_Rendezvous() {
	_, err := simjob.Simulate(simjob.Config{World: 2, Seed: 1}, func(r *rank.Rank) error {
		buf, err := r.Alloc(64)
		if err != nil {
			return err
		}
		defer r.Free(buf)
		h, err := r.Rendezvous(buf, rank.WorldGroup)
		if err != nil {
			return err
		}
		if r.ID() == 1 {
			own, err := h.GetBuffer(1, 16, device.Float32, 0)
			if err != nil {
				return err
			}
			if err := r.Write(own, fill(16, 42)); err != nil {
				return err
			}
			return h.PutSignal(0, 0, time.Second) // to rank 0, channel 0
		}
		if err := h.WaitSignal(1, 0, time.Second); err != nil { // from rank 1, channel 0
			return err
		}
		peer, err := h.GetBuffer(1, 16, device.Float32, 0)
		if err != nil {
			return err
		}
		b, err := r.Read(peer)
		if err != nil {
			return err
		}
		fmt.Printf("rank 0 reads %v from rank 1's buffer (%d ranks, pad of %d bytes)\n", first(b), h.WorldSize(), h.SignalPadSize())
		return nil
	})
	fmt.Println("error:", err)
	// Output:
	// rank 0 reads 42 from rank 1's buffer (2 ranks, pad of 2048 bytes)
	// error: <nil>
}

// The low-latency all-reduce, captured once into a graph and replayed:
// each replay reduces whatever the input holds then.
func ExampleRank_Capture() {
	res, err := simjob.Simulate(simjob.Config{World: 2, Seed: 1}, func(r *rank.Rank) error {
		ll, err := r.NewLowLatency(rank.WorldGroup, 1024)
		if err != nil {
			return err
		}
		defer ll.Close()
		in, err := r.Empty(256, device.Float32)
		if err != nil {
			return err
		}
		out, err := r.Empty(256, device.Float32)
		if err != nil {
			return err
		}
		g, err := r.Capture(func() error { return ll.AllReduce(in, device.Sum, out) })
		if err != nil {
			return err
		}
		defer g.Close()
		for step := range 2 {
			if err := r.Write(in, fill(256, float32(10*step+r.ID()))); err != nil {
				return err
			}
			if err := g.Replay(); err != nil {
				return err
			}
			b, err := r.Read(out)
			if err != nil {
				return err
			}
			if r.ID() == 0 {
				fmt.Printf("replay %d: %v\n", step, first(b))
			}
		}
		return nil
	})
	if err == nil {
		err = res.Err()
	}
	fmt.Println("error:", err)
	// Output:
	// replay 0: 1
	// replay 1: 21
	// error: <nil>
}

// IntraNodeComm picks the algorithm by size and reduces a plain tensor in
// place through its own symmetric buffer.
func ExampleRank_NewIntraNodeComm() {
	res, err := simjob.Simulate(simjob.Config{World: 2, Seed: 1}, func(r *rank.Rank) error {
		c := r.NewIntraNodeComm(rank.IntraNodeOptions{Enabled: true})
		if !c.Rendezvous() {
			return fmt.Errorf("rank %d: intra-node comm unavailable", r.ID())
		}
		defer c.Close()
		t, err := r.Empty(1024, device.Float32)
		if err != nil {
			return err
		}
		if err := r.Write(t, fill(1024, 3)); err != nil {
			return err
		}
		algo := c.SelectAlgo(t, device.Sum)
		if err := c.AllReduce(t, algo); err != nil {
			return err
		}
		b, err := r.Read(t)
		if err != nil {
			return err
		}
		if r.ID() == 0 {
			fmt.Println(algo, first(b))
		}
		return nil
	})
	if err == nil {
		err = res.Err()
	}
	fmt.Println("error:", err)
	// Output:
	// one-shot 6
	// error: <nil>
}
