package device

import (
	"fmt"
	"strings"
)

// DType is an element type of a tensor.
type DType int

// The element types all-reduce supports.
const (
	Float32 DType = iota
	BFloat16
	Float16
)

// Size is the element size in bytes.
func (d DType) Size() int {
	switch d {
	case Float32:
		return 4
	case BFloat16, Float16:
		return 2
	}
	return 0
}

// Valid reports whether d is a supported type.
func (d DType) Valid() bool { return d >= Float32 && d <= Float16 }

func (d DType) String() string {
	switch d {
	case Float32:
		return "float32"
	case BFloat16:
		return "bfloat16"
	case Float16:
		return "float16"
	}
	return fmt.Sprintf("DType(%d)", int(d))
}

// ParseDType accepts float32/f32/fp32, bfloat16/bf16, float16/f16/fp16/half.
func ParseDType(s string) (DType, error) {
	switch strings.ToLower(s) {
	case "float32", "f32", "fp32", "float":
		return Float32, nil
	case "bfloat16", "bf16":
		return BFloat16, nil
	case "float16", "f16", "fp16", "half":
		return Float16, nil
	}
	return 0, fmt.Errorf("unknown dtype %q (want float32, bfloat16 or float16)", s)
}

// ReduceOp is a reduction.
type ReduceOp int

// The reductions all-reduce supports.
const (
	Sum ReduceOp = iota
	Avg
	Max
	Min
)

// Valid reports whether op is a supported reduction.
func (op ReduceOp) Valid() bool { return op >= Sum && op <= Min }

func (op ReduceOp) String() string {
	switch op {
	case Sum:
		return "sum"
	case Avg:
		return "avg"
	case Max:
		return "max"
	case Min:
		return "min"
	}
	return fmt.Sprintf("ReduceOp(%d)", int(op))
}

// ParseReduceOp accepts sum, avg, max, min.
func ParseReduceOp(s string) (ReduceOp, error) {
	switch strings.ToLower(s) {
	case "sum":
		return Sum, nil
	case "avg", "mean":
		return Avg, nil
	case "max":
		return Max, nil
	case "min":
		return Min, nil
	}
	return 0, fmt.Errorf("unknown reduce op %q (want sum, avg, max or min)", s)
}
