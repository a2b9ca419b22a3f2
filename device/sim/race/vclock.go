package race

// vclock is a vector clock: component i counts the events of the thread
// that holds slot i (see Detector.slots). Missing components are zero.
//
// Its components lie in chunks of chunkLen, shared between clocks copy on
// write: clone copies only the chunk pointers (a clock of a thousand
// components is 16 pointers), and a clock's first write to a chunk it
// shares copies that chunk alone. join and leq skip the chunks both clocks
// share. A nil chunk is all zeros.
//
// A vclock value is a reference, like a slice: assigning it does not copy
// the clock, and a clock that two values hold without clone changes for
// both. Take a clone to keep a clock as it is now.
type vclock []*chunk

// chunkLen is the number of components in a chunk.
const chunkLen = 64

// chunk is chunkLen components of a clock. A frozen chunk may be held by
// several clocks and never changes; a clock that holds an unfrozen chunk
// is its only holder and changes it in place.
type chunk struct {
	c      [chunkLen]uint32
	frozen bool
}

func (v vclock) get(i int) uint32 {
	if k := i / chunkLen; k < len(v) {
		if ch := v[k]; ch != nil {
			return ch.c[i%chunkLen]
		}
	}
	return 0
}

// set grows v as needed.
func (v *vclock) set(i int, c uint32) {
	v.grow(i + 1)
	v.own(i / chunkLen).c[i%chunkLen] = c
}

// own returns chunk k of v, which v alone holds: a new chunk for a nil
// one, a copy of a frozen one.
func (v vclock) own(k int) *chunk {
	ch := v[k]
	switch {
	case ch == nil:
		ch = &chunk{}
		v[k] = ch
	case ch.frozen:
		ch = &chunk{c: ch.c}
		v[k] = ch
	}
	return ch
}

// grow makes room for n components.
func (v *vclock) grow(n int) {
	if k := (n + chunkLen - 1) / chunkLen; k > len(*v) {
		*v = append(*v, make([]*chunk, k-len(*v))...)
	}
}

// join makes v the component-wise maximum of v and o. A chunk of o that
// holds v's chunk is shared rather than copied.
func (v *vclock) join(o vclock) {
	v.grow(len(o) * chunkLen)
	w := *v
	for k, oc := range o {
		wc := w[k]
		if oc == nil || oc == wc {
			continue
		}
		if wc == nil || leqChunk(wc, oc) {
			oc.frozen = true
			w[k] = oc
			continue
		}
		if leqChunk(oc, wc) {
			continue
		}
		wc = w.own(k)
		for i, c := range oc.c {
			wc.c[i] = max(wc.c[i], c)
		}
	}
}

// leqChunk reports whether every component of x is at most y's.
func leqChunk(x, y *chunk) bool {
	for i, c := range x.c {
		if c > y.c[i] {
			return false
		}
	}
	return true
}

// leq reports whether every component of v is at most o's: joining v
// into o changes nothing.
func (v vclock) leq(o vclock) bool {
	for k, vc := range v {
		if vc == nil {
			continue
		}
		var oc *chunk
		if k < len(o) {
			oc = o[k]
		}
		switch {
		case vc == oc:
		case oc == nil:
			if !leqChunk(vc, &chunk{}) {
				return false
			}
		case !leqChunk(vc, oc):
			return false
		}
	}
	return true
}

// clone returns a clock equal to v that changes independently of it.
func (v vclock) clone() vclock {
	if v == nil {
		return nil
	}
	for _, ch := range v {
		if ch != nil {
			ch.frozen = true
		}
	}
	return append(vclock(nil), v...)
}

// epoch is one event of one thread: (slot, clock). It happens before every
// event whose clock knows at least clock for slot. It takes 8 bytes: a
// record holds one, and records are the detector's bulk.
type epoch struct {
	slot  int32
	clock uint32
}

// before reports whether e happens before an event with clock v.
func (e epoch) before(v vclock) bool { return e.clock <= v.get(int(e.slot)) }
