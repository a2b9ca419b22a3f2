package cabi

import (
	"encoding/binary"
	"fmt"

	"github.com/symmem/symmem/kernels"
)

// Launch is a launch made ready for the CUDA driver: the entry point that
// runs it and the byte image of its argument struct (header left zero;
// see [SetHeader]).
type Launch struct {
	Entry string
	Args  []byte
}

// Prepare checks a launch of kernel with blocks x threads and args (the
// kernel's argument struct or a non-nil pointer to it), then packs its
// arguments and picks its entry point, converting args once.
func Prepare(kernel string, blocks, threads int, args any) (Launch, error) {
	k, ok := kernels.Lookup(kernel)
	if !ok {
		return Launch{}, fmt.Errorf("unknown kernel %q", kernel)
	}
	v, err := k.Args(args)
	if err != nil {
		return Launch{}, err
	}
	if err := k.CheckLaunch(blocks, threads, v); err != nil {
		return Launch{}, err
	}
	s, err := argStruct(k)
	if err != nil {
		return Launch{}, err
	}
	return Launch{Entry: entry(k, v), Args: s.pack(LaunchHeader{}, v)}, nil
}

// Pack checks args for kernel (as the kernel's Check does) and returns the
// byte image of the kernel's C argument struct with header h.
func Pack(h LaunchHeader, kernel string, args any) ([]byte, error) {
	k, ok := kernels.Lookup(kernel)
	if !ok {
		return nil, fmt.Errorf("pack: unknown kernel %q", kernel)
	}
	v, err := k.Args(args)
	if err != nil {
		return nil, err
	}
	s, err := argStruct(k)
	if err != nil {
		return nil, fmt.Errorf("pack: %w", err)
	}
	return s.pack(h, v), nil
}

// SetHeader writes h into the header of an argument image made by Pack.
func SetHeader(b []byte, h LaunchHeader) error {
	if len(b) < launchHeader.Size {
		return fmt.Errorf("set header: argument image of %d bytes has no header", len(b))
	}
	putHeader(b, h)
	return nil
}

// Offsets of the header's members.
var (
	headerErrAt    = launchHeader.Offset("err")
	headerLaunchAt = launchHeader.Offset("launch")
)

func putHeader(b []byte, h LaunchHeader) {
	binary.LittleEndian.PutUint64(b[headerErrAt:], h.ErrorRecord)
	binary.LittleEndian.PutUint32(b[headerLaunchAt:], h.Launch)
}
