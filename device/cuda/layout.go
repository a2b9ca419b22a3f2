package cuda

import "encoding/binary"

// Values of the virtual-memory enumerations (cuda.h).
const (
	memAllocationTypePinned     = 1 // CU_MEM_ALLOCATION_TYPE_PINNED
	memHandleTypePosixFD        = 1 // CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
	memLocationTypeDevice       = 1 // CU_MEM_LOCATION_TYPE_DEVICE
	memAccessFlagsProtReadWrite = 3 // CU_MEM_ACCESS_FLAGS_PROT_READWRITE
)

// Sizes of the C structs, fixed by the driver's ABI on 64-bit hosts.
const (
	allocationPropSize = 32 // sizeof(CUmemAllocationProp)
	accessDescSize     = 12 // sizeof(CUmemAccessDesc)
)

// allocationProp is the byte image of CUmemAllocationProp for a pinned
// allocation on device ordinal dev that can be exported as a POSIX file
// descriptor:
//
//	offset  0  CUmemAllocationType       type
//	offset  4  CUmemAllocationHandleType requestedHandleTypes
//	offset  8  CUmemLocation             location { type int32; id int32 }
//	offset 16  void*                     win32HandleMetaData (NULL)
//	offset 24  allocFlags { compressionType u8; gpuDirectRDMACapable u8; usage u16; reserved [4]u8 }
//
// The image is a [4]uint64 so that it has the struct's 8-byte alignment.
func allocationProp(dev int) *[allocationPropSize / 8]uint64 {
	var b [allocationPropSize]byte
	le := binary.LittleEndian
	le.PutUint32(b[0:], memAllocationTypePinned)
	le.PutUint32(b[4:], memHandleTypePosixFD)
	le.PutUint32(b[8:], memLocationTypeDevice)
	le.PutUint32(b[12:], uint32(int32(dev)))
	return toWords(b[:])
}

// accessDesc is the byte image of one CUmemAccessDesc granting device
// ordinal dev read/write access:
//
//	offset 0  CUmemLocation      location { type int32; id int32 }
//	offset 8  CUmemAccess_flags  flags
//
// It is stored in two words (16 bytes); the driver reads the first 12.
func accessDesc(dev int) *[2]uint64 {
	var b [16]byte
	le := binary.LittleEndian
	le.PutUint32(b[0:], memLocationTypeDevice)
	le.PutUint32(b[4:], uint32(int32(dev)))
	le.PutUint32(b[8:], memAccessFlagsProtReadWrite)
	w := toWords(b[:])
	return &[2]uint64{w[0], w[1]}
}

// toWords packs little-endian bytes (a multiple of 8 long, at most 32) into
// 64-bit words.
func toWords(b []byte) *[4]uint64 {
	var w [4]uint64
	for i := 0; i+8 <= len(b); i += 8 {
		w[i/8] = binary.LittleEndian.Uint64(b[i:])
	}
	return &w
}

// wordBytes returns the little-endian bytes of words.
func wordBytes(w []uint64) []byte {
	b := make([]byte, 8*len(w))
	for i, x := range w {
		binary.LittleEndian.PutUint64(b[8*i:], x)
	}
	return b
}
