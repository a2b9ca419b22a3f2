package rank

import (
	"fmt"
	"os"

	"go.uber.org/zap"

	"github.com/symmem/symmem/actor/store"
	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/kernels"
)

// Algo is an all-reduce algorithm of [IntraNodeComm].
type Algo int

// The algorithms IntraNodeComm selects among.
const (
	AlgoNone Algo = iota
	AlgoOneShot
	AlgoTwoShot
)

func (a Algo) String() string {
	switch a {
	case AlgoNone:
		return "none"
	case AlgoOneShot:
		return "one-shot"
	case AlgoTwoShot:
		return "two-shot"
	}
	return fmt.Sprintf("Algo(%d)", int(a))
}

// Sizes that drive IntraNodeComm's algorithm choice.
const (
	IntraNodeBufferSize = 10 << 20  // symmetric buffer of each instance
	OneShotMaxBytes     = 256 << 10 // largest input for one-shot
	TwoShotMaxBytes     = 10 << 20  // largest input for two-shot
	intraNodeMaxWorld   = 8
)

// IntraNodeOptions are IntraNodeComm's switches.
type IntraNodeOptions struct {
	// Enabled turns the service on (env ENABLE_INTRA_NODE_COMM=1).
	Enabled bool
	// AssumeFullyConnected skips the topology check (TEST_INTRA_NODE_COMM=1).
	AssumeFullyConnected bool
}

// IntraNodeOptionsFromEnv reads ENABLE_INTRA_NODE_COMM and TEST_INTRA_NODE_COMM.
func IntraNodeOptionsFromEnv() IntraNodeOptions {
	return IntraNodeOptions{
		Enabled:              os.Getenv("ENABLE_INTRA_NODE_COMM") == "1",
		AssumeFullyConnected: os.Getenv("TEST_INTRA_NODE_COMM") == "1",
	}
}

// IntraNodeComm is a ready all-reduce service for the ranks of one host,
// built on a 10 MiB symmetric buffer rendezvoused on its own group.
type IntraNodeComm struct {
	r     *Rank
	opts  IntraNodeOptions
	k     int
	group string
	buf   device.Ptr
	h     *SymmetricMemory
	uses  int
	// declined says why Rendezvous returned false ("" otherwise).
	declined string
}

// NewIntraNodeComm returns an instance for r; call Rendezvous on every rank.
func (r *Rank) NewIntraNodeComm(opts IntraNodeOptions) *IntraNodeComm {
	k := r.intraNodeCount
	r.intraNodeCount++
	return &IntraNodeComm{r: r, opts: opts, k: k, group: fmt.Sprintf("IntraNodeComm%d", k)}
}

// Group is the name of the instance's group.
func (c *IntraNodeComm) Group() string { return c.group }

// Uses counts the all-reduces the instance ran.
func (c *IntraNodeComm) Uses() int { return c.uses }

// Rendezvous sets the instance up. It returns false, with the reason logged,
// when the service is disabled or the job does not qualify: fewer than 2 or
// more than 8 ranks, ranks on different hosts, ranks sharing a device, or a
// topology that is not fully connected by NVLink. Collective when enabled.
func (c *IntraNodeComm) Rendezvous() bool {
	ok, reason, err := c.rendezvous()
	if err != nil {
		reason = err.Error()
	}
	if !ok {
		c.declined = reason
		c.r.log.Info("intra-node comm not used", zap.String("group", c.group), zap.String("reason", reason))
	}
	return ok
}

// Declined says why Rendezvous returned false, or "" when it returned true
// or has not run.
func (c *IntraNodeComm) Declined() string { return c.declined }

type handshake struct {
	host   string
	device int
}

func (c *IntraNodeComm) rendezvous() (bool, string, error) {
	r := c.r
	if !c.opts.Enabled {
		return false, "ENABLE_INTRA_NODE_COMM is not set", nil
	}
	if r.world < 2 || r.world > intraNodeMaxWorld {
		return false, fmt.Sprintf("world size %d is outside [2, %d]", r.world, intraNodeMaxWorld), nil
	}
	peers, err := c.handshake()
	if err != nil {
		return false, "", err
	}
	for i, p := range peers {
		if p.host != peers[0].host {
			return false, fmt.Sprintf("rank %d is on host %q, rank 0 on %q", i, p.host, peers[0].host), nil
		}
		for j := range i {
			if peers[j].device == p.device {
				return false, fmt.Sprintf("ranks %d and %d share device %d", j, i, p.device), nil
			}
		}
	}
	if !c.opts.AssumeFullyConnected {
		m, err := r.dev.NVLinkMatrix()
		if err != nil {
			return false, "", fmt.Errorf("NVLink topology: %w", err)
		}
		if why := notFullyConnected(m, peers); why != "" {
			return false, why, nil
		}
	}
	all := make([]int, r.world)
	for i := range all {
		all[i] = i
	}
	if err := r.newGroup(c.group, all); err != nil {
		return false, "", err
	}
	buf, err := r.alloc.alloc(IntraNodeBufferSize, "")
	if err != nil {
		return false, "", fmt.Errorf("alloc %d bytes: %w", uint64(IntraNodeBufferSize), err)
	}
	h, err := r.rendezvous(buf, c.group)
	if err != nil {
		_ = r.alloc.free(buf)
		return false, "", fmt.Errorf("rendezvous %q: %w", c.group, err)
	}
	c.buf, c.h = buf, h
	return true, "", nil
}

// handshake all-gathers every rank's host and device through the Store under
// keys handshake-<k>-<rank>.
func (c *IntraNodeComm) handshake() ([]handshake, error) {
	r := c.r
	st := store.WithPrefix(r.store, "intra_node_comm")
	me := fmt.Sprintf("%d %s", r.dev.Attributes().Index, r.host)
	if err := st.Set(fmt.Sprintf("handshake-%d-%d", c.k, r.id), []byte(me)); err != nil {
		return nil, fmt.Errorf("handshake: %w", err)
	}
	out := make([]handshake, r.world)
	for i := range out {
		v, err := st.Get(fmt.Sprintf("handshake-%d-%d", c.k, i))
		if err != nil {
			return nil, fmt.Errorf("handshake with rank %d: %w", i, err)
		}
		if _, err := fmt.Sscanf(string(v), "%d %s", &out[i].device, &out[i].host); err != nil {
			if _, err2 := fmt.Sscanf(string(v), "%d", &out[i].device); err2 != nil {
				return nil, fmt.Errorf("handshake with rank %d: malformed %q", i, v)
			}
		}
	}
	return out, nil
}

// notFullyConnected explains why the ranks' devices are not all linked, or
// returns "" when every pair has NVLinks in both directions.
func notFullyConnected(m [][]int, peers []handshake) string {
	for i, a := range peers {
		for j, b := range peers {
			if i == j {
				continue
			}
			if a.device >= len(m) || b.device >= len(m) || a.device >= len(m[b.device]) || b.device >= len(m[a.device]) {
				return fmt.Sprintf("device %d or %d missing from the %d-device topology", a.device, b.device, len(m))
			}
			if m[a.device][b.device] <= 0 {
				return fmt.Sprintf("no NVLink from device %d (rank %d) to device %d (rank %d)", a.device, i, b.device, j)
			}
		}
	}
	return ""
}

// SelectAlgo picks the algorithm for reducing t with op: none unless op is
// sum, the dtype is supported and t is 4-byte aligned; one-shot up to
// 256 KiB, two-shot up to 10 MiB, each within the buffer.
func (c *IntraNodeComm) SelectAlgo(t Tensor, op device.ReduceOp) Algo {
	if c.h == nil || op != device.Sum || !t.DType.Valid() {
		return AlgoNone
	}
	bytes := t.Bytes()
	if t.Ptr%4 != 0 || bytes%4 != 0 {
		return AlgoNone
	}
	switch {
	case bytes <= OneShotMaxBytes && bytes <= c.h.bufferSize:
		return AlgoOneShot
	case bytes <= TwoShotMaxBytes && bytes <= c.h.bufferSize:
		return AlgoTwoShot
	}
	return AlgoNone
}

// AllReduce sums t across the ranks in place with algo. It counts a use.
func (c *IntraNodeComm) AllReduce(t Tensor, algo Algo) error {
	r := c.r
	if c.h == nil {
		return fmt.Errorf("rank %d: intra-node all-reduce: %s is not rendezvoused", r.id, c.group)
	}
	if algo != AlgoOneShot && algo != AlgoTwoShot {
		return fmt.Errorf("rank %d: intra-node all-reduce: invalid algorithm %v", r.id, algo)
	}
	if t.Bytes() > c.h.bufferSize {
		return fmt.Errorf("rank %d: intra-node all-reduce: %d bytes exceed the %d-byte buffer", r.id, t.Bytes(), c.h.bufferSize)
	}
	if _, err := kernels.CheckAlignment(uint64(t.Ptr)%16, t.Bytes(), t.DType); err != nil {
		return fmt.Errorf("rank %d: intra-node all-reduce: %w", r.id, err)
	}
	c.uses++
	r.log.Debug("intra-node all-reduce", zap.String("group", c.group), zap.Stringer("algo", algo), zap.Uint64("bytes", t.Bytes()))
	if t.Numel == 0 {
		return nil
	}
	view := Tensor{Ptr: c.buf, DType: t.DType, Numel: t.Numel}
	var err error
	if algo == AlgoOneShot {
		err = r.oneShotCopy(view, t, device.Sum, c.group, t)
	} else {
		err = r.dev.Copy(r.stream, view.Ptr, t.Ptr, t.Bytes())
		if err == nil {
			err = r.twoShot(view, device.Sum, c.group, Tensor{})
		}
		if err == nil {
			err = r.dev.Copy(r.stream, t.Ptr, view.Ptr, t.Bytes())
		}
		if err == nil && !r.async {
			err = r.waitStream()
		}
	}
	if err != nil {
		return fmt.Errorf("rank %d: intra-node all-reduce (%v): %w", r.id, algo, err)
	}
	return nil
}

// Close frees the instance's buffer.
func (c *IntraNodeComm) Close() error {
	if c.h == nil {
		return nil
	}
	c.h = nil
	if err := c.r.alloc.free(c.buf); err != nil {
		return fmt.Errorf("rank %d: intra-node comm %s: close: %w", c.r.id, c.group, err)
	}
	return nil
}
