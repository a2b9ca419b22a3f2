package simjob

import (
	"time"

	"github.com/symmem/symmem/actor/store"
	"github.com/symmem/symmem/device/sim/race"
)

// syncedStore wraps a Store client so the race detector sees the
// happens-before edges the Store creates between ranks: setting a key
// releases it, reading or waiting for it acquires it, and the atomic
// read-modify-writes do both. The rendezvous orders a rank's pad zeroing
// before its peers' first signals this way.
func syncedStore(c store.Client, d *race.Detector) store.Client {
	return &syncClient{c: c, d: d}
}

type syncClient struct {
	c store.Client
	d *race.Detector
}

func (s *syncClient) Set(key string, value []byte) error {
	s.d.Release(key)
	return s.c.Set(key, value)
}

func (s *syncClient) Get(key string) ([]byte, error) {
	v, err := s.c.Get(key)
	if err == nil {
		s.d.Acquire(key)
	}
	return v, err
}

func (s *syncClient) Wait(keys []string, timeout time.Duration) error {
	err := s.c.Wait(keys, timeout)
	if err == nil {
		s.d.Acquire(keys...)
	}
	return err
}

func (s *syncClient) Add(key string, delta int64) (int64, error) {
	s.d.Release(key)
	n, err := s.c.Add(key, delta)
	if err == nil {
		s.d.Acquire(key)
	}
	return n, err
}

func (s *syncClient) CompareSet(key string, expected, desired []byte) ([]byte, error) {
	s.d.Release(key)
	v, err := s.c.CompareSet(key, expected, desired)
	if err == nil {
		s.d.Acquire(key)
	}
	return v, err
}

func (s *syncClient) Check(keys []string) (bool, error) {
	ok, err := s.c.Check(keys)
	if err == nil && ok {
		s.d.Acquire(keys...)
	}
	return ok, err
}

func (s *syncClient) Delete(key string) (bool, error) { return s.c.Delete(key) }

func (s *syncClient) NumKeys() (int, error) { return s.c.NumKeys() }

// NextSequence keeps the wrapped client's sequence counters (no store
// request, so no edge).
func (s *syncClient) NextSequence(scope string) uint64 { return s.c.NextSequence(scope) }
