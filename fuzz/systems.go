package fuzz

import (
	"sync"

	pa "github.com/asynkron/protoactor-go/actor"

	"github.com/symmem/symmem/actor"
)

// systemUses is how many runs reuse one actor system. Building a system
// costs more than a small run; each run leaves a few unnamed actors
// registered in it, so systems are retired after this many runs.
const systemUses = 256

// pooledSystem is an actor system and the number of runs it has served.
type pooledSystem struct {
	sys  *pa.ActorSystem
	uses int
}

// systems hands each running case an actor system no other running case
// uses.
var systems = sync.Pool{New: func() any { return &pooledSystem{sys: actor.NewSystem()} }}

// withSystem runs fn with an actor system of the pool.
func withSystem(fn func(*pa.ActorSystem)) {
	ps := systems.Get().(*pooledSystem)
	fn(ps.sys)
	ps.uses++
	if ps.uses < systemUses {
		systems.Put(ps)
	}
}
