package cabi

import (
	"slices"
	"strconv"

	"github.com/symmem/symmem/kernels"
)

// Entry is the name of the CUDA function that runs a launch of kernel with
// args. Kernels with specialised entries (see [kernels.Specialised]; the
// one-shot and two-shot all-reduce) have entry points compiled for one
// dtype and world size with 16-byte vectors, named
// <kernel>_<dtype>_w<world> (e.g. two_shot_all_reduce_bf16_w4): they skip
// the generic entry's run-time dispatch on dtype, vector width and world
// size, and their registers are allotted for that one case. Every other
// launch runs the kernel's generic entry, whose name is kernel. Both
// compute the same result; the simulator runs one Go twin per kernel and
// ignores entries.
func Entry(kernel string, args any) string {
	k, ok := kernels.Lookup(kernel)
	if !ok {
		return kernel
	}
	return entry(k, args)
}

func entry(k *kernels.Kernel, args any) string {
	sp := k.Specialised()
	if sp == nil {
		return k.Name
	}
	dt, world, ok := sp.Match(args)
	if !ok || !slices.Contains(sp.Worlds, world) || !slices.Contains(sp.DTypes, dt) {
		return k.Name
	}
	for _, d := range dtypes {
		if d.dt == dt {
			return specialName(k.Name, d.suffix, world)
		}
	}
	return k.Name
}

func specialName(kernel, suffix string, world int) string {
	return kernel + "_" + suffix + "_w" + strconv.Itoa(world)
}

// SpecialEntry is one specialised entry point: the arguments of the
// generated header's X-macro SYMMEM_SPECIALISED_ENTRIES.
type SpecialEntry struct {
	Name   string // the entry point
	Kernel string // its kernel (the generic entry)
	Bounds int    // __launch_bounds__
	Body   string // C++ body template
	Type   string // C++ element type
	World  int
}

// SpecialEntries lists every specialised entry point, by kernel name,
// then in each kernel's dtype and world order.
func SpecialEntries() []SpecialEntry {
	var out []SpecialEntry
	for _, name := range kernels.Names() {
		k, _ := kernels.Lookup(name)
		sp := k.Specialised()
		if sp == nil {
			continue
		}
		for _, dt := range sp.DTypes {
			for _, d := range dtypes {
				if d.dt != dt {
					continue
				}
				for _, w := range sp.Worlds {
					out = append(out, SpecialEntry{
						Name: specialName(name, d.suffix, w), Kernel: name,
						Bounds: sp.Bounds, Body: sp.Body, Type: d.ctype, World: w,
					})
				}
			}
		}
	}
	return out
}

// Entries lists every CUDA function a launch can run: each kernel's generic
// entry and every specialised one [Entry] can return, sorted. The CUDA
// device resolves them all when it opens, so that no kernel is loaded
// while another one spins (see device/cuda).
func Entries() []string {
	names := kernels.Names()
	for _, e := range SpecialEntries() {
		names = append(names, e.Name)
	}
	slices.Sort(names)
	return names
}
