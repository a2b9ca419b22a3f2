package cuda

import (
	"errors"
	"fmt"
	"maps"

	"github.com/symmem/symmem/device"
)

// captureModeRelaxed is CU_STREAM_CAPTURE_MODE_RELAXED: other threads of
// the process (other ranks' streams) may keep synchronizing while a stream
// captures.
const captureModeRelaxed = 2

// graph is an instantiated CUDA graph and what its launches were.
type graph struct {
	stream device.Stream          // the stream it was captured on: its kernels report there
	g      uintptr                // CUgraph
	exec   uintptr                // CUgraphExec
	names  map[uint32]launchLabel // launch number -> kernel, for error reports
}

// capturing fails for operations that wait for a capturing stream: the
// driver would end the capture with an error.
func (st *stream) capturing(op string) error {
	if st.captured != nil {
		return fmt.Errorf("%s: the stream is capturing a graph (end the capture first)", op)
	}
	return nil
}

func (g *gpu) BeginCapture(s device.Stream) error {
	return g.do(opf("begin capture on stream %d", s), func() error {
		st, err := g.stream(s)
		if err != nil {
			return err
		}
		if st.captured != nil {
			return errors.New("the stream is already capturing")
		}
		if err := g.drv.check("cuStreamBeginCapture_v2", g.drv.cuStreamBeginCapture(st.cu, captureModeRelaxed)); err != nil {
			return err
		}
		st.captured = map[uint32]launchLabel{}
		return nil
	})
}

func (g *gpu) EndCapture(s device.Stream) (device.Graph, error) {
	var id device.Graph
	err := g.do(opf("end capture on stream %d", s), func() error {
		st, err := g.stream(s)
		if err != nil {
			return err
		}
		if st.captured == nil {
			return errors.New("the stream is not capturing")
		}
		gr := &graph{stream: s, names: st.captured}
		st.captured = nil
		if err := g.drv.check("cuStreamEndCapture", g.drv.cuStreamEndCapture(st.cu, &gr.g)); err != nil {
			return err
		}
		if err := g.drv.check("cuGraphInstantiateWithFlags", g.drv.cuGraphInstantiateWithFlags(&gr.exec, gr.g, 0)); err != nil {
			return errors.Join(err, g.drv.check("cuGraphDestroy", g.drv.cuGraphDestroy(gr.g)))
		}
		maps.Copy(st.graphNames, gr.names)
		id = g.nextGraph
		g.nextGraph++
		g.graphs[id] = gr
		return nil
	})
	return id, err
}

func (g *gpu) LaunchGraph(id device.Graph, s device.Stream) error {
	return g.do(opf("launch graph %d on stream %d", id, s), func() error {
		gr, ok := g.graphs[id]
		if !ok {
			return fmt.Errorf("unknown graph %d", id)
		}
		if gr.stream != s {
			return fmt.Errorf("graph %d was captured on stream %d: its kernels report errors there", id, gr.stream)
		}
		st, err := g.stream(s)
		if err != nil {
			return err
		}
		if err := st.capturing("launch graph"); err != nil {
			return err
		}
		return g.drv.check("cuGraphLaunch", g.drv.cuGraphLaunch(gr.exec, st.cu))
	})
}

// DestroyGraph releases the graph's driver objects and forgets it. When
// the driver fails to destroy one, the graph stays known with what is
// left of it, so that destroying it again retries only that.
func (g *gpu) DestroyGraph(id device.Graph) error {
	return g.do(opf("destroy graph %d", id), func() error {
		gr, ok := g.graphs[id]
		if !ok {
			return fmt.Errorf("unknown graph %d", id)
		}
		if err := g.destroyGraph(gr); err != nil {
			return err
		}
		delete(g.graphs, id)
		if st, ok := g.streams[gr.stream]; ok {
			for n := range gr.names {
				delete(st.graphNames, n)
			}
		}
		return nil
	})
}

// destroyGraph releases the driver's objects of gr that it still holds,
// each one forgotten once the driver destroyed it. It runs with the
// context current.
func (g *gpu) destroyGraph(gr *graph) error {
	var errs []error
	if gr.exec != 0 {
		if err := g.drv.check("cuGraphExecDestroy", g.drv.cuGraphExecDestroy(gr.exec)); err != nil {
			errs = append(errs, err)
		} else {
			gr.exec = 0
		}
	}
	if gr.g != 0 {
		if err := g.drv.check("cuGraphDestroy", g.drv.cuGraphDestroy(gr.g)); err != nil {
			errs = append(errs, err)
		} else {
			gr.g = 0
		}
	}
	return errors.Join(errs...)
}
