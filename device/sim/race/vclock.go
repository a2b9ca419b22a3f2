package race

// vclock is a vector clock: component i counts the events of the thread
// that holds slot i (see Detector.slots). Missing components are zero.
type vclock []uint32

func (v vclock) get(i int) uint32 {
	if i < len(v) {
		return v[i]
	}
	return 0
}

// set grows v as needed.
func (v *vclock) set(i int, c uint32) {
	v.grow(i + 1)
	(*v)[i] = c
}

func (v *vclock) grow(n int) {
	if n > len(*v) {
		*v = append(*v, make([]uint32, n-len(*v))...)
	}
}

// join makes v the component-wise maximum of v and o.
func (v *vclock) join(o vclock) {
	v.grow(len(o))
	w := *v
	for i, c := range o {
		if c > w[i] {
			w[i] = c
		}
	}
}

// leq reports whether every component of v is at most o's: joining v
// into o changes nothing.
func (v vclock) leq(o vclock) bool {
	for i, c := range v {
		if c > o.get(i) {
			return false
		}
	}
	return true
}

func (v vclock) clone() vclock {
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
