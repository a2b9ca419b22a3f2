package actor

import (
	"io"
	"log/slog"

	pa "github.com/asynkron/protoactor-go/actor"
)

// NewSystem returns a protoactor actor system whose own log output is
// discarded (protoactor logs to the terminal by default).
func NewSystem() *pa.ActorSystem {
	return pa.NewActorSystem(pa.WithLoggerFactory(func(*pa.ActorSystem) *slog.Logger {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}))
}

// Dispatcher returns a protoactor dispatcher that turns every mailbox run
// into a scheduler task, so actor message processing is scheduled by the
// seeded strategy like any other task. Use it with pa.WithDispatcher on the
// props of every actor of a simulated job.
func (s *Scheduler) Dispatcher() pa.Dispatcher { return s.NamedDispatcher("mailbox") }

// NamedDispatcher is Dispatcher with the tasks it starts named name, so
// deadlock reports say whose mailbox run is blocked.
func (s *Scheduler) NamedDispatcher(name string) pa.Dispatcher {
	return s.LabeledDispatcher(Label{Name: name})
}

// LabeledDispatcher is Dispatcher with the tasks it starts labelled l (a
// rank's program: kind ProgramTask and its rank).
func (s *Scheduler) LabeledDispatcher(l Label) pa.Dispatcher { return schedDispatcher{s, l} }

type schedDispatcher struct {
	s     *Scheduler
	label Label
}

func (d schedDispatcher) Schedule(fn func()) { d.s.GoLabeled(d.label, fn) }

func (d schedDispatcher) Throughput() int { return 1 << 30 }
