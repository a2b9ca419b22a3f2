package bench

import (
	"fmt"

	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/kernels"
	"github.com/symmem/symmem/oracle"
	"github.com/symmem/symmem/rank"
)

// chunkElems is how many elements are generated, written, read and checked
// at a time, so a large case needs little host memory.
const chunkElems = 1 << 20

// Value is element i of rank's input under seed: a multiple of 1/32 in
// [-4, 4), exactly representable in every supported dtype and never all
// zeros, from a counter-based hash so that any range of any rank's input
// can be produced on its own.
func Value(seed uint64, rank int, i uint64) float32 {
	z := seed*0x9e3779b97f4a7c15 + uint64(rank+1)*0xbf58476d1ce4e5b9 + i*0x94d049bb133111eb
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	z ^= z >> 31
	return float32(int(z>>56)-128) / 32
}

// Input returns elements [from, from+n) of rank's input, encoded as dt.
func Input(dt device.DType, seed uint64, rank int, from, n uint64) ([]byte, error) {
	vals := make([]float32, n)
	for k := range vals {
		vals[k] = Value(seed, rank, from+uint64(k))
	}
	return kernels.Encode(dt, vals)
}

// fill writes this rank's input into t, chunk by chunk.
func fill(r *rank.Rank, t rank.Tensor, seed uint64) error {
	for from := uint64(0); from < t.Numel; from += chunkElems {
		n := min(chunkElems, t.Numel-from)
		b, err := Input(t.DType, seed, r.ID(), from, n)
		if err != nil {
			return err
		}
		part, err := t.Slice(from, from+n)
		if err != nil {
			return err
		}
		if err := r.Write(part, b); err != nil {
			return err
		}
	}
	return nil
}

// CountWrong compares got (elements [from, from+len) of a result) with
// what oracle.AllReduce makes of every rank's input under seed, and
// returns how many elements differ bitwise.
func CountWrong(dt device.DType, op device.ReduceOp, world int, seed uint64, from uint64, got []byte) (int64, error) {
	size := uint64(dt.Size())
	if size == 0 {
		return 0, fmt.Errorf("count wrong: unsupported dtype %v", dt)
	}
	if uint64(len(got))%size != 0 {
		return 0, fmt.Errorf("count wrong: %d bytes is not a whole number of %v elements", len(got), dt)
	}
	n := uint64(len(got)) / size
	inputs := make([][]byte, world)
	for r := range inputs {
		b, err := Input(dt, seed, r, from, n)
		if err != nil {
			return 0, fmt.Errorf("count wrong: %w", err)
		}
		inputs[r] = b
	}
	want, err := oracle.AllReduce(dt, op, inputs)
	if err != nil {
		return 0, fmt.Errorf("count wrong: %w", err)
	}
	var wrong int64
	for i := uint64(0); i < n; i++ {
		a, b := got[i*size:(i+1)*size], want[i*size:(i+1)*size]
		for k := range a {
			if a[k] != b[k] {
				wrong++
				break
			}
		}
	}
	return wrong, nil
}

// checkResult reads t, chunk by chunk, and counts its elements that differ
// from the reference.
func checkResult(r *rank.Rank, t rank.Tensor, op device.ReduceOp, seed uint64) (int64, error) {
	var wrong int64
	for from := uint64(0); from < t.Numel; from += chunkElems {
		n := min(chunkElems, t.Numel-from)
		part, err := t.Slice(from, from+n)
		if err != nil {
			return 0, err
		}
		got, err := r.Read(part)
		if err != nil {
			return 0, err
		}
		w, err := CountWrong(t.DType, op, r.World(), seed, from, got)
		if err != nil {
			return 0, err
		}
		wrong += w
	}
	return wrong, nil
}
