package store

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Group is a set of participants that rendezvous together. Name identifies
// the member set: every member uses the same name, and different member
// sets use different names.
type Group struct {
	Name  string
	Ranks []int // global ranks of the members, strictly increasing
}

// Exchange runs collectives over a [Client] for one participant of a
// [Group]: call [Exchange.AllGather] and [Exchange.Barrier] on every member
// in the same order.
//
// The n-th collective of a group under a prefix uses the keys
// <prefix>/<group>/<n>/<rank>. n comes from the client's [Sequencer], one
// counter per (connection, prefix, group), so a collective on a strict
// subgroup does not shift the numbering of later ones on other groups, and a
// new Exchange for the same group continues where the last one stopped.
type Exchange struct {
	c     Client
	seq   Sequencer
	scope string // the full key prefix of the group's keys, view prefixes included
	base  string // <prefix>/<group>, as c sees it
	g     Group
	rank  int
	pos   int
}

// NewExchange prepares collectives for participant rank (a global rank in
// g) under prefix ("" for none). c must come from this package or
// implement [Sequencer].
func NewExchange(c Client, prefix string, g Group, rank int) (*Exchange, error) {
	if err := g.validate(); err != nil {
		return nil, fmt.Errorf("store exchange: %w", err)
	}
	pos, ok := slices.BinarySearch(g.Ranks, rank)
	if !ok {
		return nil, fmt.Errorf("store exchange: rank %d is not a member of group %q %v", rank, g.Name, g.Ranks)
	}
	seq, views := sequencerOf(c)
	if seq == nil {
		return nil, fmt.Errorf("store exchange: client %T keeps no sequence counters (implement store.Sequencer)", c)
	}
	base := g.Name
	if prefix != "" {
		base = prefix + "/" + g.Name
	}
	return &Exchange{
		c:     c,
		seq:   seq,
		scope: views + base,
		base:  base,
		g:     Group{Name: g.Name, Ranks: slices.Clone(g.Ranks)},
		rank:  rank,
		pos:   pos,
	}, nil
}

func (g *Group) validate() error {
	if g.Name == "" {
		return errors.New("group has no name")
	}
	if strings.Contains(g.Name, "/") {
		return fmt.Errorf("group name %q contains '/'", g.Name)
	}
	if len(g.Ranks) == 0 {
		return fmt.Errorf("group %q has no members", g.Name)
	}
	for i, r := range g.Ranks {
		if r < 0 {
			return fmt.Errorf("group %q: negative rank %d", g.Name, r)
		}
		if i > 0 && r <= g.Ranks[i-1] {
			return fmt.Errorf("group %q: ranks %v are not strictly increasing", g.Name, g.Ranks)
		}
	}
	return nil
}

func (e *Exchange) key(seq uint64, rank int) string {
	return fmt.Sprintf("%s/%d/%d", e.base, seq, rank)
}

// AllGather publishes value and returns every member's value, indexed by
// position in the group's Ranks. It waits up to the client's default
// timeout for the other members; the error then names the ranks that did
// not arrive and their keys. Every member must pass a value of the same
// size, else every member gets an error wrapping [ErrSizeMismatch] that
// lists which ranks sent which size.
func (e *Exchange) AllGather(value []byte) ([][]byte, error) {
	seq := e.seq.NextSequence(e.scope)
	fail := func(err error) error {
		return fmt.Errorf("all_gather %q seq %d (rank %d): %w", e.base, seq, e.rank, err)
	}
	if err := e.c.Set(e.key(seq, e.rank), value); err != nil {
		return nil, fail(err)
	}
	keys := make([]string, len(e.g.Ranks))
	for i, r := range e.g.Ranks {
		keys[i] = e.key(seq, r)
	}
	if err := e.c.Wait(keys, 0); err != nil {
		var mk *MissingKeysError
		if errors.As(err, &mk) {
			return nil, fail(fmt.Errorf("ranks %v did not arrive: %w", e.ranksOf(mk.Keys, seq), err))
		}
		return nil, fail(err)
	}
	out := make([][]byte, len(e.g.Ranks))
	for i, r := range e.g.Ranks {
		if i == e.pos {
			out[i] = append([]byte(nil), value...)
			continue
		}
		v, err := e.c.Get(keys[i])
		if err != nil {
			return nil, fail(fmt.Errorf("read rank %d: %w", r, err))
		}
		out[i] = v
	}
	if err := e.sameSizes(out); err != nil {
		return nil, fail(err)
	}
	// Every member has now entered this collective, so all have finished
	// reading the previous one: its key of ours is no longer needed.
	if seq > 0 {
		if _, err := e.c.Delete(e.key(seq-1, e.rank)); err != nil {
			return nil, fail(fmt.Errorf("delete the previous round's key: %w", err))
		}
	}
	return out, nil
}

// Barrier returns once every member has reached it: an all_gather of
// nothing.
func (e *Exchange) Barrier() error {
	_, err := e.AllGather(nil)
	return err
}

// ranksOf maps keys of round seq back to ranks.
func (e *Exchange) ranksOf(keys []string, seq uint64) []int {
	var ranks []int
	for _, k := range keys {
		for _, r := range e.g.Ranks {
			if k == e.key(seq, r) {
				ranks = append(ranks, r)
				break
			}
		}
	}
	return ranks
}

// sameSizes reports, when payload sizes differ, which ranks sent which
// size (sizes in order of first appearance).
func (e *Exchange) sameSizes(vals [][]byte) error {
	var sizes []int
	byLen := map[int][]int{}
	for i, v := range vals {
		if _, seen := byLen[len(v)]; !seen {
			sizes = append(sizes, len(v))
		}
		byLen[len(v)] = append(byLen[len(v)], e.g.Ranks[i])
	}
	if len(sizes) == 1 {
		return nil
	}
	parts := make([]string, len(sizes))
	for i, n := range sizes {
		parts[i] = fmt.Sprintf("%d bytes from ranks %v", n, byLen[n])
	}
	return fmt.Errorf("%w: %s", ErrSizeMismatch, strings.Join(parts, ", "))
}
