package signal

import (
	"strconv"
	"strings"
	"testing"
)

func TestCheckChannelBounds(t *testing.T) {
	const pad = 4096
	for _, world := range []int{1, 2, 3, 8, 72} {
		max := pad / (4 * world)
		if got := Channels(pad, world); got != max {
			t.Fatalf("world %d: Channels = %d, want %d", world, got, max)
		}
		if err := CheckChannel(max-1, world, pad); err != nil {
			t.Errorf("world %d: channel max-1 = %d rejected: %v", world, max-1, err)
		}
		err := CheckChannel(max, world, pad)
		if err == nil {
			t.Fatalf("world %d: channel max = %d accepted", world, max)
		}
		if msg := err.Error(); !strings.Contains(msg, "channel "+strconv.Itoa(max)) || !strings.Contains(msg, strconv.Itoa(max)+")") {
			t.Errorf("error %q does not name the channel and the bound", msg)
		}
		if err := CheckChannel(-1, world, pad); err == nil {
			t.Errorf("world %d: channel -1 accepted", world)
		}
		if err := CheckChannel(0, world, pad); err != nil {
			t.Errorf("world %d: channel 0 rejected: %v", world, err)
		}
	}
	// The bound is pad/(4*world), not pad/(4*world*world): the largest channel
	// must still fit the pad.
	if w := 4; SlotOffset(Channels(pad, w)-1, w, w-1)+SlotBytes > pad {
		t.Error("the last channel's last slot lies outside the pad")
	}
	if err := CheckChannel(0, 2, 4); err == nil {
		t.Error("a pad with no channel accepted channel 0")
	}
}

func TestCheckRank(t *testing.T) {
	for _, world := range []int{1, 2, 8, 72} {
		for _, r := range []int{-1, world} {
			err := CheckRank(r, world)
			if err == nil {
				t.Fatalf("rank %d accepted for world %d", r, world)
			}
			if !strings.Contains(err.Error(), "rank "+strconv.Itoa(r)) || !strings.Contains(err.Error(), strconv.Itoa(world)+")") {
				t.Errorf("error %q does not name the rank and the bound", err)
			}
		}
		for _, r := range []int{0, world - 1} {
			if err := CheckRank(r, world); err != nil {
				t.Errorf("rank %d rejected for world %d: %v", r, world, err)
			}
		}
	}
	for _, world := range []int{0, -1, MaxWorld + 1} {
		if err := CheckWorld(world); err == nil {
			t.Errorf("world %d accepted", world)
		}
		if err := CheckRank(0, world); err == nil {
			t.Errorf("rank 0 of world %d accepted", world)
		}
	}
}

func TestSlotLayout(t *testing.T) {
	const world = 4
	seen := map[int]bool{}
	for ch := 0; ch < 3; ch++ {
		for src := 0; src < world; src++ {
			i := SlotIndex(ch, world, src)
			if i != ch*world+src || SlotOffset(ch, world, src) != uint64(4*i) {
				t.Fatalf("slot (ch %d, src %d) = %d", ch, src, i)
			}
			if seen[i] {
				t.Fatalf("slot %d used twice", i)
			}
			seen[i] = true
		}
	}
	if PadBytes(3, world) != 3*world*4 || Channels(PadBytes(3, world), world) != 3 {
		t.Fatal("PadBytes and Channels disagree")
	}
}

func TestLocate(t *testing.T) {
	put, err := Locate(Put, 1, 3, 2, 4, 1024)
	if err != nil {
		t.Fatal(err)
	}
	if put.Pad != 3 || put.Index != 2*4+1 || put.Offset != 4*9 || put.Peer != 3 || put.Rank != 1 {
		t.Fatalf("put slot %+v", put)
	}
	wait, err := Locate(Wait, 3, 1, 2, 4, 1024)
	if err != nil {
		t.Fatal(err)
	}
	// The wait of rank 3 for rank 1 consumes exactly the slot rank 1's put raised.
	if wait.Pad != put.Pad || wait.Index != put.Index {
		t.Fatalf("wait slot %+v does not match put slot %+v", wait, put)
	}
	for _, c := range []struct{ rank, peer, ch int }{{-1, 0, 0}, {4, 0, 0}, {0, 4, 0}, {0, -1, 0}, {0, 1, 64}, {0, 1, -1}} {
		if _, err := Locate(Put, c.rank, c.peer, c.ch, 4, 1024); err == nil {
			t.Errorf("Locate(%+v) accepted", c)
		}
	}
	if _, err := Locate(Op(7), 0, 0, 0, 4, 1024); err == nil {
		t.Error("invalid op accepted")
	}
}

func TestCASRules(t *testing.T) {
	old, new := Put.Swap()
	if old != 0 || new != 1 {
		t.Fatalf("put swaps %d->%d", old, new)
	}
	old, new = Wait.Swap()
	if old != 1 || new != 0 {
		t.Fatalf("wait swaps %d->%d", old, new)
	}
	cases := []struct {
		op   Op
		prev uint32
		want Outcome
	}{
		{Put, 0, Done}, {Put, 1, Retry}, {Put, 2, Corrupt}, {Put, 0xdeadbeef, Corrupt},
		{Wait, 1, Done}, {Wait, 0, Retry}, {Wait, 7, Corrupt},
	}
	for _, c := range cases {
		if got := c.op.Next(c.prev); got != c.want {
			t.Errorf("%v.Next(%d) = %v, want %v", c.op, c.prev, got, c.want)
		}
	}
	if !Put.Ready(0) || Put.Ready(1) || !Wait.Ready(1) || Wait.Ready(0) {
		t.Error("Ready disagrees with Swap")
	}
	if Put.HostOrder() != Release || Wait.HostOrder() != Acquire {
		t.Error("host-visible put must release and wait must acquire")
	}
	e := &CorruptError{Slot: Slot{Op: Wait, Rank: 1, Peer: 0, Channel: 2, Pad: 1, Index: 4}, Value: 0xabcd}
	if !strings.Contains(e.Error(), "0x0000abcd") || !strings.Contains(e.Error(), "slot 4") {
		t.Errorf("corrupt error %q", e)
	}
}

func TestOrderScope(t *testing.T) {
	names := map[string]string{
		Relaxed.String(): "relaxed", Acquire.String(): "acquire", Release.String(): "release", AcqRel.String(): "acq_rel",
		Block.String(): "block", GPU.String(): "gpu", System.String(): "system",
	}
	for got, want := range names {
		if got != want {
			t.Errorf("String() = %q, want %q", got, want)
		}
	}
	if Order(9).Valid() || Scope(-1).Valid() || !AcqRel.Valid() || !System.Valid() {
		t.Error("Valid is wrong")
	}
	cross := Needed(false, false)
	if cross != System || Needed(true, false) != GPU || Needed(true, true) != Block {
		t.Fatal("Needed is wrong")
	}
	cases := []struct {
		rel    Order
		rs     Scope
		acq    Order
		as     Scope
		need   Scope
		synced bool
	}{
		{Release, System, Acquire, System, System, true},
		{AcqRel, System, AcqRel, System, System, true},
		{Relaxed, System, Acquire, System, System, false}, // relaxed put publishes nothing
		{Release, System, Relaxed, System, System, false},
		{Release, GPU, Acquire, System, System, false}, // gpu-scoped release never reaches another device
		{Release, System, Acquire, GPU, System, false},
		{Release, GPU, Acquire, GPU, GPU, true},
		{Release, Block, Acquire, Block, GPU, false},
	}
	for _, c := range cases {
		if got := Synchronizes(c.rel, c.rs, c.acq, c.as, c.need); got != c.synced {
			t.Errorf("Synchronizes(%v %v, %v %v, need %v) = %v", c.rel, c.rs, c.acq, c.as, c.need, got)
		}
	}
}
