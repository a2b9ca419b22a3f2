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
