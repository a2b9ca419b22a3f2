package rank

import (
	"fmt"

	"github.com/symmem/symmem/device"
)

// Tensor is a one-dimensional view of device memory on one rank's device.
type Tensor struct {
	Ptr   device.Ptr   // address of element 0
	DType device.DType // element type
	Numel uint64       // number of elements
}

// Bytes is the size of the view in bytes.
func (t Tensor) Bytes() uint64 { return t.Numel * uint64(t.DType.Size()) }

// checkSize fails for a view larger than an allocation can be (see
// maxAlloc), whose byte size might not even fit in 64 bits.
func (t Tensor) checkSize() error {
	if size := uint64(max(1, t.DType.Size())); t.Numel > maxAlloc/size {
		return fmt.Errorf("tensor of %d %v elements is larger than the %d-byte limit of an allocation", t.Numel, t.DType, uint64(maxAlloc))
	}
	return nil
}

// Slice returns elements [from, to) of t.
func (t Tensor) Slice(from, to uint64) (Tensor, error) {
	if from > to || to > t.Numel {
		return Tensor{}, fmt.Errorf("slice [%d, %d) of a tensor of %d elements", from, to, t.Numel)
	}
	return Tensor{Ptr: t.Ptr.Add(from * uint64(t.DType.Size())), DType: t.DType, Numel: to - from}, nil
}

func (t Tensor) String() string {
	return fmt.Sprintf("%s[%d]@%v", t.DType, t.Numel, t.Ptr)
}
