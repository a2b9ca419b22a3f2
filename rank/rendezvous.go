package rank

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/symmem/symmem/actor/store"
	"github.com/symmem/symmem/device"
)

// exchangePrefix is the Store prefix of rendezvous exchanges.
const exchangePrefix = "symm_mem"

// maxHost is the longest host name a rendezvous request carries.
const maxHost = 64

// request is what each rank announces in a rendezvous.
type request struct {
	Device     int32
	PID        int32
	Host       string
	BlockSize  uint64
	BufferSize uint64
	PadOffset  uint64
	PadSize    uint64
	PadsInUse  uint64 // bit i: the rank's pad i of this allocation is taken
	Multicast  bool
}

// requestSize is the encoded size of a request: every rank's payload has the
// same size, as the exchange requires.
const requestSize = 4 + 4 + maxHost + 5*8 + 1

func (q request) encode() ([]byte, error) {
	if len(q.Host) > maxHost {
		return nil, fmt.Errorf("host name %q longer than %d bytes", q.Host, maxHost)
	}
	if strings.IndexByte(q.Host, 0) >= 0 {
		return nil, fmt.Errorf("host name %q contains a NUL byte", q.Host)
	}
	b := make([]byte, 0, requestSize)
	b = binary.LittleEndian.AppendUint32(b, uint32(q.Device))
	b = binary.LittleEndian.AppendUint32(b, uint32(q.PID))
	var host [maxHost]byte
	copy(host[:], q.Host)
	b = append(b, host[:]...)
	for _, v := range []uint64{q.BlockSize, q.BufferSize, q.PadOffset, q.PadSize, q.PadsInUse} {
		b = binary.LittleEndian.AppendUint64(b, v)
	}
	var mc byte
	if q.Multicast {
		mc = 1
	}
	return append(b, mc), nil
}

// decodeRequest parses a peer's request; it rejects anything malformed.
func decodeRequest(b []byte) (request, error) {
	if len(b) != requestSize {
		return request{}, fmt.Errorf("rendezvous request of %d bytes, want %d", len(b), requestSize)
	}
	var q request
	q.Device = int32(binary.LittleEndian.Uint32(b))
	q.PID = int32(binary.LittleEndian.Uint32(b[4:]))
	host := b[8 : 8+maxHost]
	if i := bytes.IndexByte(host, 0); i >= 0 {
		if bytes.IndexFunc(host[i:], func(r rune) bool { return r != 0 }) >= 0 {
			return request{}, errors.New("rendezvous request: host name has bytes after its terminator")
		}
		host = host[:i]
	}
	q.Host = string(host)
	o := 8 + maxHost
	q.BlockSize = binary.LittleEndian.Uint64(b[o:])
	q.BufferSize = binary.LittleEndian.Uint64(b[o+8:])
	q.PadOffset = binary.LittleEndian.Uint64(b[o+16:])
	q.PadSize = binary.LittleEndian.Uint64(b[o+24:])
	q.PadsInUse = binary.LittleEndian.Uint64(b[o+32:])
	switch b[o+40] {
	case 0:
	case 1:
		q.Multicast = true
	default:
		return request{}, fmt.Errorf("rendezvous request: multicast flag %d, want 0 or 1", b[o+40])
	}
	if q.Device < 0 || q.PID <= 0 {
		return request{}, fmt.Errorf("rendezvous request: device %d, pid %d", q.Device, q.PID)
	}
	return q, nil
}

// validate checks the requests of every member (indexed by group position).
func validate(group string, members []int, reqs []request, allowOverlap bool) error {
	first := reqs[0]
	for i, q := range reqs[1:] {
		for _, f := range []struct {
			name string
			a, b uint64
		}{
			{"block size", first.BlockSize, q.BlockSize},
			{"buffer size", first.BufferSize, q.BufferSize},
			{"signal pad offset", first.PadOffset, q.PadOffset},
			{"signal pad size", first.PadSize, q.PadSize},
		} {
			if f.a != f.b {
				return fmt.Errorf("group %q: %s differs: rank %d has %d, rank %d has %d",
					group, f.name, members[0], f.a, members[i+1], f.b)
			}
		}
	}
	if allowOverlap {
		return nil
	}
	type hostDev struct {
		host string
		dev  int32
	}
	seen := map[hostDev]int{}
	for i, q := range reqs {
		k := hostDev{q.Host, q.Device}
		if j, ok := seen[k]; ok {
			return fmt.Errorf("group %q: ranks %d and %d both use device %d on host %q "+
				"(set SYMMEM_ALLOW_OVERLAPPING_DEVICES=1 to allow)", group, members[j], members[i], q.Device, q.Host)
		}
		seen[k] = i
	}
	return nil
}

// padRegion picks the group's pad on the allocation: the lowest one that no
// member uses yet. Every member computes it from the same requests, so all
// agree.
func padRegion(group string, members []int, reqs []request) (int, error) {
	var used uint64
	for _, q := range reqs {
		used |= q.PadsInUse
	}
	for i := range PadRegions {
		if used&(1<<i) == 0 {
			return i, nil
		}
	}
	for i, q := range reqs {
		if q.PadsInUse&(1<<PadRegions-1) == 1<<PadRegions-1 {
			return 0, fmt.Errorf("group %q: rank %d's allocation is already rendezvoused on %d groups, the most one allocation can serve (rank.PadRegions)",
				group, members[i], PadRegions)
		}
	}
	return 0, fmt.Errorf("group %q: the members' allocations have no signal pad free in common among their %d (rank.PadRegions): each member's is taken by another group",
		group, PadRegions)
}

// sharingDevice counts the members whose requests name the same host and
// device as member pos's (1 unless overlapping devices are allowed).
func sharingDevice(reqs []request, pos int) int {
	n := 0
	for _, q := range reqs {
		if q.Host == reqs[pos].Host && q.Device == reqs[pos].Device {
			n++
		}
	}
	return n
}

// Rendezvous exchanges the symmetric allocation holding p with every member
// of group and returns the handle. It is collective over the group; the
// result is cached per (allocation, group).
func (r *Rank) Rendezvous(p device.Ptr, group string) (*SymmetricMemory, error) {
	h, err := r.rendezvous(p, group)
	if err != nil {
		r.logFailure("rendezvous", group, err)
		return nil, fmt.Errorf("rank %d: rendezvous %q: %w", r.id, group, err)
	}
	return h, nil
}

// IsRendezvousCompleted reports whether the allocation holding p has a
// rendezvous on group.
func (r *Rank) IsRendezvousCompleted(p device.Ptr, group string) bool {
	b, err := r.alloc.find(p, 0)
	return err == nil && b.handles[group] != nil
}

func (r *Rank) rendezvous(p device.Ptr, group string) (*SymmetricMemory, error) {
	b, err := r.alloc.find(p, 0)
	if err != nil {
		return nil, err
	}
	if h := b.handles[group]; h != nil {
		return h, nil
	}
	members, err := r.group(group)
	if err != nil {
		return nil, err
	}
	pos := slices.Index(members, r.id)
	if pos < 0 {
		return nil, fmt.Errorf("rank %d is not a member (members %v)", r.id, members)
	}
	ex, err := store.NewExchange(r.store, exchangePrefix, store.Group{Name: group, Ranks: members}, r.id)
	if err != nil {
		return nil, err
	}
	attrs := r.dev.Attributes()
	mine := request{
		Device: int32(attrs.Index), PID: int32(r.pid), Host: r.host,
		BlockSize: b.size, BufferSize: b.bufSize, PadOffset: b.padOffset, PadSize: b.padSize,
		PadsInUse: b.padsInUse, Multicast: attrs.MulticastSupported,
	}
	payload, err := mine.encode()
	if err != nil {
		return nil, err
	}
	fd, err := r.dev.ExportHandle(b.handle)
	if err != nil {
		return nil, fmt.Errorf("export handle: %w", err)
	}
	defer r.dev.CloseFD(fd)
	r.rt.Record("rendezvous", fmt.Sprintf("rank %d group %s start", r.id, group))
	r.logRendezvous("rendezvous start", group, members, b.bufSize)
	raw, err := ex.AllGather(payload)
	if err != nil {
		return nil, fmt.Errorf("exchange requests: %w", err)
	}
	reqs := make([]request, len(raw))
	for i, b := range raw {
		if reqs[i], err = decodeRequest(b); err != nil {
			return nil, fmt.Errorf("rank %d's request: %w", members[i], err)
		}
	}
	if err := validate(group, members, reqs, r.allowOverlap); err != nil {
		return nil, err
	}
	region, err := padRegion(group, members, reqs)
	if err != nil {
		return nil, err
	}
	pids := make([]int, len(reqs))
	for i, q := range reqs {
		pids[i] = int(q.PID)
	}
	fds, err := r.ipc.AllGatherFDs(pos, pids, fd, r.timeout)
	if err != nil {
		return nil, fmt.Errorf("exchange handles: %w", err)
	}
	h := &SymmetricMemory{
		r: r, blk: b, group: group, members: members, rank: pos,
		bufferSize: b.bufSize, padSize: b.padSize, padRegion: region, sharing: sharingDevice(reqs, pos),
		label: &device.Group{Name: group, Ranks: members},
	}
	if err := h.mapPeers(fds); err != nil {
		_ = h.release()
		return nil, err
	}
	if err := ex.Barrier(); err != nil {
		_ = h.release()
		return nil, fmt.Errorf("final barrier: %w", err)
	}
	b.handles[group] = h
	b.padsInUse |= 1 << region
	r.rt.Record("rendezvous", fmt.Sprintf("rank %d group %s done", r.id, group))
	r.logRendezvous("rendezvous done", group, members, b.bufSize)
	return h, nil
}
