package kernels

import (
	"fmt"
	"reflect"
	"sort"

	"github.com/symmem/symmem/device"
)

// Args are the kernels' argument structs. Each names the signal pads its
// launch uses (for the simulator's reports and fault injection).
type Args interface {
	SignalArgs | AllReduceArgs
	Pads() Pads
}

// Pads is what a launch's arguments say about its signal pads: the rank
// and world size of the launch, the device array of every rank's pad
// address and the size of every pad.
type Pads struct {
	Rank, World int
	Ptrs        device.Ptr
	Bytes       uint64
}

// ShapeParams are what a kernel's reference launch shape depends on: the
// tensor (numel elements of DType), the world size, the device's
// multiprocessors (SMCount <= 0: no cap) and a block limit replacing the
// kernel's own (MaxBlocks <= 0: the kernel's).
type ShapeParams struct {
	Numel     uint64
	DType     device.DType
	World     int
	SMCount   int
	MaxBlocks int
}

// blockLimit is p.MaxBlocks when set, else def.
func (p ShapeParams) blockLimit(def int) int {
	if p.MaxBlocks > 0 {
		return p.MaxBlocks
	}
	return def
}

// Descriptor is everything about one kernel whose arguments are an A:
// what it is called, how its arguments and launch shape are checked, the
// shape it is launched with, its simulator body and how its CUDA entry
// point is chosen. Each kernel is one Descriptor passed to [Register];
// devices, the C ABI (package kernels/cabi) and its generated header all
// follow from it.
type Descriptor[A Args] struct {
	// Name is the kernel's name and its CUDA generic entry point.
	Name string
	// Collective marks a collective kernel (an all-reduce), as opposed to
	// the signal primitives.
	Collective bool
	// Check validates the arguments without touching device memory.
	Check func(a A) error
	// Shape is the reference launch shape.
	Shape func(p ShapeParams) (blocks, threads int)
	// CheckLaunch checks a launch shape against the arguments, beyond the
	// limits every kernel shares (at least one block, 1 to MaxThreads
	// threads); nil accepts every such shape.
	CheckLaunch func(blocks, threads int, a A) error
	// Run is the body one thread block runs in the simulator.
	Run func(b Block, a A) error
	// Specialised, when set, lists the CUDA entry points compiled for one
	// dtype and world size.
	Specialised *Specialised[A]
}

// Specialised describes a kernel's CUDA entry points compiled for one
// dtype and world size each, named <kernel>_<dtype>_w<world> (see package
// kernels/cabi): one for every pair of DTypes and Worlds. Entries of a
// kernel share its generic entry's launch bounds.
type Specialised[A Args] struct {
	// Body is the C++ template (in namespace symmem) the entries run:
	// all_reduce_fixed<Body, type, world>.
	Body string
	// Bounds is the entries' __launch_bounds__ (threads per block).
	Bounds int
	// DTypes and Worlds are the compiled cases, in the order the entries
	// are defined.
	DTypes []device.DType
	Worlds []int
	// Match returns the dtype and world size of a launch that can run on
	// a specialised entry; ok is false when it needs the generic one.
	Match func(a A) (dt device.DType, world int, ok bool)
}

// Kernel is a registered kernel: its [Descriptor] behind methods that take
// the argument struct as any (an A or a non-nil *A) and convert it once.
type Kernel struct {
	// Name is the kernel's name.
	Name string
	// Collective marks a collective kernel (see [Descriptor]).
	Collective bool

	argType     reflect.Type
	args        func(args any) (any, error)
	check       func(args any) error
	shape       func(p ShapeParams) (blocks, threads int)
	checkLaunch func(blocks, threads int, args any) error
	run         func(b Block, args any) error
	pads        func(args any) (Pads, error)
	special     *Specialisation
}

// Specialisation is a kernel's [Specialised] without its argument type.
type Specialisation struct {
	// Body, Bounds, DTypes and Worlds are as in [Specialised].
	Body   string
	Bounds int
	DTypes []device.DType
	Worlds []int
	// Match is [Specialised.Match] on an argument struct given as any; ok
	// is false for arguments of another type.
	Match func(args any) (dt device.DType, world int, ok bool)
}

var registry = map[string]*Kernel{}

// Register adds the kernel d describes and returns it. It panics when a
// kernel of that name is registered already or d lacks a part: kernels
// register once, from package variables.
func Register[A Args](d Descriptor[A]) *Kernel {
	if d.Name == "" || d.Check == nil || d.Shape == nil || d.Run == nil {
		panic(fmt.Sprintf("kernels: descriptor of %q lacks its name, Check, Shape or Run", d.Name))
	}
	if _, dup := registry[d.Name]; dup {
		panic(fmt.Sprintf("kernels: %s registered twice", d.Name))
	}
	name := d.Name
	conv := func(args any) (A, error) { return argsOf[A](name, args) }
	k := &Kernel{
		Name:       name,
		Collective: d.Collective,
		argType:    reflect.TypeFor[A](),
		args: func(args any) (any, error) {
			a, err := conv(args)
			if err != nil {
				return nil, err
			}
			return a, d.Check(a)
		},
		check: func(args any) error {
			a, err := conv(args)
			if err != nil {
				return err
			}
			return d.Check(a)
		},
		shape: d.Shape,
		checkLaunch: func(blocks, threads int, args any) error {
			a, err := conv(args)
			if err != nil || d.CheckLaunch == nil {
				return err
			}
			return d.CheckLaunch(blocks, threads, a)
		},
		run: func(b Block, args any) error {
			a, err := conv(args)
			if err != nil {
				return err
			}
			return d.Run(b, a)
		},
		pads: func(args any) (Pads, error) {
			a, err := conv(args)
			if err != nil {
				return Pads{}, err
			}
			return a.Pads(), nil
		},
	}
	if s := d.Specialised; s != nil {
		k.special = &Specialisation{
			Body: s.Body, Bounds: s.Bounds, DTypes: s.DTypes, Worlds: s.Worlds,
			Match: func(args any) (device.DType, int, bool) {
				a, err := conv(args)
				if err != nil {
					return 0, 0, false
				}
				return s.Match(a)
			},
		}
	}
	registry[name] = k
	return k
}

// argsOf accepts an A or a non-nil *A.
func argsOf[A Args](kernel string, args any) (A, error) {
	switch a := args.(type) {
	case A:
		return a, nil
	case *A:
		if a != nil {
			return *a, nil
		}
	}
	var zero A
	return zero, fmt.Errorf("kernel %s: arguments are %T, want kernels.%s", kernel, args, reflect.TypeOf(zero).Name())
}

// ArgType is the type of the kernel's argument struct.
func (k *Kernel) ArgType() reflect.Type { return k.argType }

// Args converts args (an A or a non-nil *A) to the argument struct's
// value and checks it; devices call it once per launch and pass its
// result to the other methods.
func (k *Kernel) Args(args any) (any, error) { return k.args(args) }

// Check validates args without touching device memory.
func (k *Kernel) Check(args any) error { return k.check(args) }

// Shape is the kernel's reference launch shape for p.
func (k *Kernel) Shape(p ShapeParams) (blocks, threads int) {
	p.World = max(p.World, 1)
	return k.shape(p)
}

// CheckLaunch checks a launch shape the way the CUDA kernels need it: at
// least one block, 1 to MaxThreads threads per block, and the kernel's own
// limits against its arguments.
func (k *Kernel) CheckLaunch(blocks, threads int, args any) error {
	if blocks < 1 || threads < 1 || threads > MaxThreads {
		return fmt.Errorf("kernel %s: launch of %d blocks x %d threads (want >= 1 block, 1 to %d threads)", k.Name, blocks, threads, MaxThreads)
	}
	return k.checkLaunch(blocks, threads, args)
}

// Run runs the kernel's body for one thread block in the simulator.
func (k *Kernel) Run(b Block, args any) error { return k.run(b, args) }

// Pads returns what args say about the launch's signal pads.
func (k *Kernel) Pads(args any) (Pads, error) { return k.pads(args) }

// Specialised lists the kernel's specialised CUDA entry points, or nil.
func (k *Kernel) Specialised() *Specialisation { return k.special }

// Lookup returns the kernel registered under name.
func Lookup(name string) (*Kernel, bool) {
	k, ok := registry[name]
	return k, ok
}

// Names lists the registered kernels in sorted order.
func Names() []string {
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Shape is the reference launch shape of kernel for numel elements of dt on
// world ranks and a device with smCount multiprocessors (<= 0: no cap); see
// each kernel's descriptor. Unknown kernels get (0, 0).
//
// Block b of an all-reduce waits for block b of every peer, so the blocks
// of every rank must be resident at once: one rank per device, or, where
// ranks share a device (tests), smCount divided among them.
func Shape(kernel string, numel uint64, dt device.DType, world int, smCount int) (blocks, threads int) {
	return ShapeMax(kernel, numel, dt, world, smCount, 0)
}

// ShapeMax is Shape with the all-reduce kernels' block limit replaced by
// maxBlocks when it is positive (still capped by smCount).
func ShapeMax(kernel string, numel uint64, dt device.DType, world, smCount, maxBlocks int) (blocks, threads int) {
	k, ok := Lookup(kernel)
	if !ok {
		return 0, 0
	}
	return k.Shape(ShapeParams{Numel: numel, DType: dt, World: world, SMCount: smCount, MaxBlocks: maxBlocks})
}
