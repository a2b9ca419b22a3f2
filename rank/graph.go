package rank

import (
	"errors"
	"fmt"

	"github.com/symmem/symmem/device"
)

// Graph is a recorded sequence of a rank's device work, replayed as one
// launch: a CUDA graph on GPUs. Replaying a graph of n collectives costs
// one host call instead of n kernel launches, which is what bounds small
// all-reduces in a host loop. Made by [Rank.Capture].
type Graph struct {
	r *Rank
	g device.Graph
}

// Capture runs record with the rank's stream recording instead of running:
// the collectives record enqueues (OneShotAllReduceOut, TwoShotAllReduce,
// TwoShotAllReduceOut, LowLatency.AllReduce) become a graph
// that [Graph.Replay] launches as one unit, on the tensors they were given,
// reading whatever those tensors hold at replay time.
//
// While recording, calls return once their work is recorded, as with
// SetAsync(true), and nothing may wait for the stream: Synchronize, tensor
// reads and writes, the signal operations of SymmetricMemory (which wait
// for their kernel) and the first use of a buffer on a group (its
// rendezvous) fail. Rendezvous buffers and create LowLatency instances
// before capturing. A graph of collectives is collective: every member of
// their groups must capture the same calls and replay them the same number
// of times, in the same order as its other collectives.
//
// If record returns an error, or the device cannot capture, no graph is
// made and the stream is back to running work.
func (r *Rank) Capture(record func() error) (*Graph, error) {
	if err := r.dev.BeginCapture(r.stream); err != nil {
		return nil, fmt.Errorf("rank %d: capture: %w", r.id, err)
	}
	async := r.async
	r.async = true
	rerr := record()
	r.async = async
	g, eerr := r.dev.EndCapture(r.stream)
	if eerr == nil && rerr != nil {
		eerr = r.dev.DestroyGraph(g)
	}
	if err := errors.Join(rerr, eerr); err != nil {
		return nil, fmt.Errorf("rank %d: capture: %w", r.id, err)
	}
	return &Graph{r: r, g: g}, nil
}

// Replay launches the graph on the rank's stream. Unless the rank is
// asynchronous it then waits, and reports a kernel's failure as
// Synchronize does.
func (g *Graph) Replay() error {
	r := g.r
	if r == nil {
		return errors.New("replay graph: the graph is closed")
	}
	if err := r.dev.LaunchGraph(g.g, r.stream); err != nil {
		return fmt.Errorf("rank %d: replay graph: %w", r.id, err)
	}
	if r.async {
		return nil
	}
	return r.Synchronize()
}

// Close releases the graph; replays already queued still run. Closing
// twice is harmless.
func (g *Graph) Close() error {
	r := g.r
	if r == nil {
		return nil
	}
	g.r = nil
	if err := r.dev.DestroyGraph(g.g); err != nil {
		return fmt.Errorf("rank %d: close graph: %w", r.id, err)
	}
	return nil
}
