package actor

import "math/bits"

// taskSet is a set of tasks ordered by ID that finds a task's position
// and the task at a position in O(log n): the scheduler's runnable set,
// which holds tens of thousands of lanes in a PTX launch and changes at
// almost every step (a sorted slice moved half its tasks for each
// insertion or removal).
//
// The IDs from base up are cut into chunks of 64, each a bitmap of the
// IDs present and their tasks (nil while none is); a Fenwick tree over
// the chunks' counts gives the number of tasks before a chunk and the
// chunk that holds the task at a position. The bitmaps lie side by side
// (a few KiB for a launch's lanes): a search reads the tasks of one
// chunk at most.
type taskSet struct {
	base   int        // the ID of bit 0 of chunk 0, a multiple of 64
	words  []uint64   // words[c]: the IDs of chunk c present, a bit each
	chunks []*idChunk // chunks[c]: their tasks; nil where none is present
	tree   []int32    // tree[i]: the count of chunks (i-lowbit(i), i], 1-based
	top    int        // the highest power of two <= len(chunks) (0: none)
	n      int
	spare  []*idChunk // emptied chunks, reused
}

type idChunk [64]*Task

// maxSpare bounds the emptied chunks a taskSet keeps for reuse.
const maxSpare = 16

// len is the number of tasks in the set.
func (s *taskSet) len() int { return s.n }

// locate is the chunk of id and its bit there, the chunk possibly out
// of range (negative or past the end).
func (s *taskSet) locate(id int) (int, uint) {
	off := id - s.base
	return off >> 6, uint(off & 63)
}

// has reports whether t is in the set.
func (s *taskSet) has(t *Task) bool {
	c, b := s.locate(t.id)
	if c < 0 || c >= len(s.chunks) || s.words[c]&(1<<b) == 0 {
		return false
	}
	return s.chunks[c][b] == t
}

// add puts t in the set, if it is not there.
func (s *taskSet) add(t *Task) {
	if s.has(t) {
		return
	}
	if len(s.chunks) == 0 {
		s.base = t.id &^ 63
	}
	c, b := s.locate(t.id)
	if c < 0 || c >= len(s.chunks) {
		s.span(t.id)
		c, b = s.locate(t.id)
	}
	ch := s.chunks[c]
	if ch == nil {
		if k := len(s.spare); k > 0 {
			ch = s.spare[k-1]
			s.spare = s.spare[:k-1]
		} else {
			ch = new(idChunk)
		}
		s.chunks[c] = ch
	}
	s.words[c] |= 1 << b
	ch[b] = t
	s.n++
	for i := c + 1; i <= len(s.tree)-1; i += i & -i {
		s.tree[i]++
	}
}

// remove takes t out of the set and reports whether it was there.
func (s *taskSet) remove(t *Task) bool {
	if !s.has(t) {
		return false
	}
	c, b := s.locate(t.id)
	ch := s.chunks[c]
	s.words[c] &^= 1 << b
	ch[b] = nil
	if s.words[c] == 0 {
		s.chunks[c] = nil
		if len(s.spare) < maxSpare {
			s.spare = append(s.spare, ch)
		}
	}
	s.n--
	for i := c + 1; i <= len(s.tree)-1; i += i & -i {
		s.tree[i]--
	}
	return true
}

// rank is the number of tasks in the set numbered below id: the index of
// the task numbered id, or where it would go.
func (s *taskSet) rank(id int) int {
	c, b := s.locate(id)
	switch {
	case c < 0:
		return 0
	case c >= len(s.chunks):
		return s.n
	}
	r := 0
	for i := c; i > 0; i &= i - 1 {
		r += int(s.tree[i])
	}
	return r + bits.OnesCount64(s.words[c]&(1<<b-1))
}

// at is the task at index k of the set in ID order; 0 <= k < len().
func (s *taskSet) at(k int) *Task {
	// Descend the Fenwick tree to the last chunk with fewer than k+1
	// tasks before it.
	c := 0
	for step := s.top; step > 0; step >>= 1 {
		if i := c + step; i < len(s.tree) && int(s.tree[i]) <= k {
			c = i
			k -= int(s.tree[i])
		}
	}
	w := s.words[c]
	sh := 0
	for ; sh < 56; sh += 8 {
		n := bits.OnesCount8(uint8(w >> sh))
		if k < n {
			break
		}
		k -= n
	}
	w >>= sh
	for ; k > 0; k-- {
		w &= w - 1
	}
	return s.chunks[c][sh+bits.TrailingZeros64(w)]
}

// appendTo appends the tasks of the set to dst in ID order.
func (s *taskSet) appendTo(dst []*Task) []*Task {
	for c, w := range s.words {
		for ; w != 0; w &= w - 1 {
			dst = append(dst, s.chunks[c][bits.TrailingZeros64(w)])
		}
	}
	return dst
}

// span widens the chunks to cover id: down to it, or up to it with room
// for as many chunks again, and rebuilds the tree.
func (s *taskSet) span(id int) {
	if id < s.base {
		grow := (s.base - id&^63) >> 6
		words := make([]uint64, len(s.words)+grow)
		copy(words[grow:], s.words)
		chunks := make([]*idChunk, len(s.chunks)+grow)
		copy(chunks[grow:], s.chunks)
		s.base -= grow << 6
		s.words, s.chunks = words, chunks
	} else {
		n := max(2*((id-s.base)>>6+1), 16)
		words := make([]uint64, n)
		copy(words, s.words)
		chunks := make([]*idChunk, n)
		copy(chunks, s.chunks)
		s.words, s.chunks = words, chunks
	}
	s.build()
}

// trim drops the chunks below floor, an ID no task in the set is
// numbered below (the set's IDs only grow, so the low ones empty), and
// rebuilds the tree.
func (s *taskSet) trim(floor int) {
	drop := 0
	for drop < len(s.chunks) && s.chunks[drop] == nil && s.base+(drop+1)<<6 <= floor {
		drop++
	}
	if drop == 0 {
		return
	}
	s.words = append(s.words[:0], s.words[drop:]...)
	s.chunks = append(s.chunks[:0], s.chunks[drop:]...)
	clear(s.chunks[len(s.chunks) : len(s.chunks)+drop])
	s.base += drop << 6
	s.build()
}

// build makes the tree over the chunks' counts.
func (s *taskSet) build() {
	n := len(s.chunks)
	if cap(s.tree) >= n+1 {
		s.tree = s.tree[:n+1]
		clear(s.tree)
	} else {
		s.tree = make([]int32, n+1)
	}
	for i, w := range s.words {
		s.tree[i+1] += int32(bits.OnesCount64(w))
		if j := (i + 1) + (i+1)&-(i+1); j <= n {
			s.tree[j] += s.tree[i+1]
		}
	}
	s.top = 0
	if n > 0 {
		s.top = 1 << (bits.Len(uint(n)) - 1)
	}
}
