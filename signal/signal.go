// Package signal owns the signal pad protocol: the pad layout (which uint32
// slot carries a signal from one rank to another on a channel), the channel
// and rank bounds that are checked before any memory is touched, the
// compare-and-swap rules of put and wait, and the memory order and scope
// types recorded on every atomic operation.
//
// Everything here is pure: the package knows nothing of how or where pad
// memory is stored. Devices and kernels apply these rules to real memory.
//
// # Layout
//
// A pad is an array of uint32 slots, all zero at rest. The signal from rank
// src to rank dst on channel c lives in dst's pad at slot c*world + src, so a
// pad of padBytes bytes has padBytes / (4*world) channels.
//
// # Rules
//
// put: compare-and-swap 0 -> 1 on the slot, retried while the slot still holds
// 1 (the receiver has not consumed the previous signal yet; a sender is at
// most one signal ahead). wait: compare-and-swap 1 -> 0, retried while the
// slot holds 0 (consumes the signal and resets the slot). Every put has
// exactly one matching wait, so pads return to zero. A slot holding any other
// value was never written by the protocol (a pad that was not zeroed, or a
// stray write): see [Corrupt].
package signal

import (
	"fmt"
)

// SlotBytes is the size of one pad slot.
const SlotBytes = 4

// MaxWorld is the largest world size the pad layout and the kernels support
// (the largest NVLink domain of one host).
const MaxWorld = 72

// CheckWorld reports an error unless 1 <= world <= MaxWorld.
func CheckWorld(world int) error {
	if world < 1 || world > MaxWorld {
		return fmt.Errorf("world size %d out of range [1, %d]", world, MaxWorld)
	}
	return nil
}

// CheckRank reports an error unless 0 <= r < world.
func CheckRank(r, world int) error {
	if err := CheckWorld(world); err != nil {
		return err
	}
	if r < 0 || r >= world {
		return fmt.Errorf("rank %d out of range [0, %d)", r, world)
	}
	return nil
}

// Channels is the number of channels a pad of padBytes bytes holds for a
// group of world ranks: padBytes / (4*world), 0 for an invalid world.
func Channels(padBytes uint64, world int) int {
	if world < 1 {
		return 0
	}
	n := padBytes / (SlotBytes * uint64(world))
	if n > uint64(maxInt) {
		return maxInt
	}
	return int(n)
}

const maxInt = int(^uint(0) >> 1)

// CheckChannel reports an error unless 0 <= channel < Channels(padBytes, world).
func CheckChannel(channel, world int, padBytes uint64) error {
	if err := CheckWorld(world); err != nil {
		return err
	}
	n := Channels(padBytes, world)
	if channel < 0 || channel >= n {
		return fmt.Errorf("channel %d out of range [0, %d) (pad of %d bytes, world size %d)",
			channel, n, padBytes, world)
	}
	return nil
}

// SlotIndex is the index of the slot, in the pad of the receiving rank, that
// carries the signal from rank src on channel. It does not check bounds; use
// [Locate] for checked access.
func SlotIndex(channel, world, src int) int { return channel*world + src }

// SlotOffset is the byte offset of [SlotIndex] inside the pad.
func SlotOffset(channel, world, src int) uint64 {
	return uint64(SlotIndex(channel, world, src)) * SlotBytes
}

// PadBytes is the pad size that holds channels channels for world ranks.
func PadBytes(channels, world int) uint64 {
	return uint64(channels) * uint64(world) * SlotBytes
}

// Slot names one slot touched by one signal operation: who acts, the peer it
// signals or waits for, and where the slot is.
type Slot struct {
	Op      Op
	Rank    int // the rank performing the operation
	Peer    int // put: the destination rank; wait: the source rank
	Channel int
	Pad     int    // the rank whose pad holds the slot
	Index   int    // slot index inside that pad
	Offset  uint64 // byte offset of the slot inside that pad
}

func (s Slot) String() string {
	return fmt.Sprintf("%s rank %d peer %d channel %d: pad of rank %d slot %d",
		s.Op, s.Rank, s.Peer, s.Channel, s.Pad, s.Index)
}

// Locate checks the arguments of a signal operation and names its slot. For
// [Put] the slot is in peer's pad at channel*world + rank; for [Wait] it is
// in rank's own pad at channel*world + peer.
func Locate(op Op, rank, peer, channel, world int, padBytes uint64) (Slot, error) {
	if !op.Valid() {
		return Slot{}, fmt.Errorf("invalid signal op %d", int(op))
	}
	if err := CheckRank(rank, world); err != nil {
		return Slot{}, fmt.Errorf("%s: %w", op, err)
	}
	if err := CheckRank(peer, world); err != nil {
		return Slot{}, fmt.Errorf("%s: peer: %w", op, err)
	}
	if err := CheckChannel(channel, world, padBytes); err != nil {
		return Slot{}, fmt.Errorf("%s: %w", op, err)
	}
	s := Slot{Op: op, Rank: rank, Peer: peer, Channel: channel}
	if op == Put {
		s.Pad, s.Index = peer, SlotIndex(channel, world, rank)
	} else {
		s.Pad, s.Index = rank, SlotIndex(channel, world, peer)
	}
	s.Offset = uint64(s.Index) * SlotBytes
	return s, nil
}
