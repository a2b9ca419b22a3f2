package cabi

import "github.com/symmem/symmem/device"

// Enum is a C enum crossing the ABI; the generated header defines it from
// the Go constants, so the two cannot drift apart.
type Enum struct {
	Name   string // C name
	Type   string // underlying C type
	Doc    string
	Values []EnumValue
}

// EnumValue is one enumerator.
type EnumValue struct {
	Name    string // C name
	Value   int64
	Comment string
}

// dtypes are the element types as the ABI names them: the enumerator, the
// suffix of specialised entry points and the C++ element type they are
// compiled for.
var dtypes = []struct {
	dt     device.DType
	enum   string
	suffix string
	ctype  string
}{
	{device.Float32, "kFloat32", "f32", "F32"},
	{device.BFloat16, "kBFloat16", "bf16", "BF16"},
	{device.Float16, "kFloat16", "f16", "F16"},
}

// reduceOps are the reduce operations as the ABI names them.
var reduceOps = []struct {
	op   device.ReduceOp
	enum string
}{
	{device.Sum, "kSum"},
	{device.Avg, "kAvg"},
	{device.Max, "kMax"},
	{device.Min, "kMin"},
}

// Enums lists the enums of the ABI in the order the header defines them.
func Enums() []Enum {
	dt := Enum{Name: "DType", Type: "int", Doc: "Element types (AllReduceArgs::dtype; Go: device.DType)."}
	for _, d := range dtypes {
		dt.Values = append(dt.Values, EnumValue{Name: d.enum, Value: int64(d.dt), Comment: d.dt.String()})
	}
	op := Enum{Name: "ReduceOp", Type: "int", Doc: "Reduce operations (AllReduceArgs::op; Go: device.ReduceOp)."}
	for _, o := range reduceOps {
		op.Values = append(op.Values, EnumValue{Name: o.enum, Value: int64(o.op), Comment: o.op.String()})
	}
	reasons := Enum{Name: "ErrorReason", Type: "uint32_t", Doc: "Reasons a kernel gives up (ErrorRecord::reason; Go: cabi.Reason*).", Values: []EnumValue{
		{"kWaitTimeout", ReasonWaitTimeout, "a wait found no signal before its timeout"},
		{"kPutTimeout", ReasonPutTimeout, "a put found the previous signal still pending"},
		{"kPutCorrupt", ReasonPutCorrupt, "a put found a slot value no signal writes"},
		{"kWaitCorrupt", ReasonWaitCorrupt, "a wait found a slot value no signal writes"},
		{"kNullPointer", ReasonNullPointer, "a pointer array held a null entry"},
		{"kMisaligned", ReasonMisaligned, "a rank's tensor is not aligned to the vector width"},
		{"kOutputAlias", ReasonOutputAlias, "output overlaps this rank's buffer tensor"},
		{"kDataTimeout", ReasonDataTimeout, "the low-latency kernel's packets did not arrive"},
		{"kWrongEntry", ReasonWrongEntry, "a specialised entry point got a launch it was not built for"},
	}}
	return []Enum{dt, op, reasons}
}
