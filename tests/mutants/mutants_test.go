package mutants

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/symmem/symmem/actor"
	"github.com/symmem/symmem/actor/store"
	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/device/sim"
	"github.com/symmem/symmem/internal/barriermut"
	"github.com/symmem/symmem/internal/longtest"
	"github.com/symmem/symmem/kernels"
	"github.com/symmem/symmem/rank"
	"github.com/symmem/symmem/signal"
	"github.com/symmem/symmem/simjob"
)

// mutant is one deliberately broken variant of the protocol: a program,
// and how the run's configuration installs the breakage.
type mutant struct {
	name    string
	world   int
	program rank.Program // the mutated program
	control rank.Program // the unmutated program: must pass
	apply   func(cfg *simjob.Config)
}

func mutants() []mutant {
	return []mutant{
		{name: "end barrier removed", world: 2, program: reduceLoop(oneShot),
			apply: wrapBlocks(barriermut.Mutation{Kernel: kernels.OneShotAllReduce, Barrier: 2, Skip: true})},
		{name: "middle barrier put relaxed", world: 2, program: reduceLoop(twoShotOut),
			apply: wrapBlocks(barriermut.Mutation{Kernel: kernels.TwoShotAllReduce, Barrier: 2, Put: barriermut.Order(signal.Relaxed)})},
		{name: "start barrier wait relaxed", world: 2, program: reduceLoop(oneShot),
			apply: wrapBlocks(barriermut.Mutation{Kernel: kernels.OneShotAllReduce, Barrier: 1, Wait: barriermut.Order(signal.Relaxed)})},
		{name: "a wait skipped", world: 2, program: reduceLoop(oneShot),
			apply: wrapBlocks(barriermut.Mutation{Kernel: kernels.OneShotAllReduce, Barrier: 1, SkipWait: true})},
		{name: "channel bound off by world size", world: 2, program: channelProbe,
			apply: wrapDevices(func(d device.Device) device.Device { return &wideBound{Device: d} })},
		{name: "one pad shared by two groups", world: 3, program: overlappingGroups,
			apply: func(cfg *simjob.Config) {
				cfg.WrapStore = func(_ int, c store.Client) store.Client { return &unannouncedPads{Client: c} }
			}},
		{name: "StoreExchange sequence per process", world: 3, program: subgroupThenWorld,
			apply: func(cfg *simjob.Config) {
				cfg.WrapStore = func(_ int, c store.Client) store.Client { return &perProcessSeq{Client: c} }
			}},
		{name: "two streams on one pad", world: 2, program: barrierThenRead,
			apply: wrapDevices(func(d device.Device) device.Device { return &sideStream{Device: d} })},
	}
}

// wrapBlocks installs a kernel mutation in every simulated device.
func wrapBlocks(m barriermut.Mutation) func(*simjob.Config) {
	return func(cfg *simjob.Config) { cfg.Device.WrapBlock = m.Wrap }
}

// Device mutants.

func wrapDevices(wrap func(device.Device) device.Device) func(*simjob.Config) {
	return func(cfg *simjob.Config) {
		cfg.WrapDevice = func(_ int, d device.Device) device.Device { return wrap(d) }
	}
}

// wideBound declares every launch's pad world-size times larger than it
// is: the device-side channel bound becomes padBytes/4.
type wideBound struct{ device.Device }

func (d *wideBound) Launch(s device.Stream, l device.Launch) error {
	switch a := l.Args.(type) {
	case kernels.SignalArgs:
		a.PadBytes *= uint64(a.World)
		l.Args = a
	case kernels.AllReduceArgs:
		a.PadBytes *= uint64(a.World)
		l.Args = a
	}
	return d.Device.Launch(s, l)
}

// sideStream issues the rank's signal kernels on a second stream; the rank
// still synchronizes only its own.
type sideStream struct {
	device.Device
	side device.Stream
	made bool
}

func (d *sideStream) Launch(s device.Stream, l device.Launch) error {
	switch l.Kernel {
	case kernels.Barrier, kernels.PutSignal, kernels.WaitSignal:
		if !d.made {
			side, err := d.Device.NewStream()
			if err != nil {
				return err
			}
			d.side, d.made = side, true
		}
		s = d.side
	}
	return d.Device.Launch(s, l)
}

// perProcessSeq numbers every collective of the process with one counter,
// whatever its group (the reference's bug).
type perProcessSeq struct {
	store.Client
	n uint64
}

func (c *perProcessSeq) NextSequence(string) uint64 {
	c.n++
	return c.n - 1
}

// unannouncedPads zeroes the pads-in-use field of every rendezvous request
// a rank sends: each member then picks a group's pad from its own pads in
// use alone, and members that took part in different groups disagree, so
// that one group's signals land in another's pad.
type unannouncedPads struct{ store.Client }

// padsInUseAt is where a rendezvous request (rank/rendezvous.go) carries
// its pads-in-use bitmask, and requestBytes its length.
const padsInUseAt, requestBytes = 4 + 4 + 64 + 4*8, 4 + 4 + 64 + 5*8 + 1

func (c *unannouncedPads) Set(key string, value []byte) error {
	if strings.HasPrefix(key, "symm_mem/") && len(value) == requestBytes {
		value = append([]byte(nil), value...)
		clear(value[padsInUseAt : padsInUseAt+8])
	}
	return c.Client.Set(key, value)
}

// Schedules: the first two are fixed strategies, the rest seeded random
// walks.

type oldestFirst struct{}

func (oldestFirst) Next(int64, []*actor.Task) int { return 0 }

type newestFirst struct{}

func (newestFirst) Next(_ int64, runnable []*actor.Task) int { return len(runnable) - 1 }

func schedule(n int) (actor.Strategy, string) {
	switch n {
	case 1:
		return oldestFirst{}, "oldest-first"
	case 2:
		return newestFirst{}, "newest-first"
	}
	seed := uint64(n - 2)
	return actor.NewRandomWalk(seed), fmt.Sprintf("random walk seed %d", seed)
}

// verdict runs one schedule and names every check that failed.
func verdict(world int, program rank.Program, apply func(*simjob.Config), n int) (caught []string, detail string) {
	strat, _ := schedule(n)
	cfg := simjob.Config{World: world, Seed: uint64(n), Strategy: strat, RaceDetector: true,
		Timeout: 5 * time.Second, MaxSteps: 500_000}
	if apply != nil {
		apply(&cfg)
	}
	res, err := simjob.Simulate(cfg, program)
	var dl *actor.DeadlockError
	switch {
	case errors.As(err, &dl):
		caught, detail = append(caught, "deadlock"), err.Error()
	case errors.Is(err, actor.ErrStepLimit):
		caught, detail = append(caught, "step limit"), err.Error()
	case err != nil:
		caught, detail = append(caught, "simulation error"), err.Error()
	}
	if res.Races != nil {
		caught = append(caught, "race")
		if detail == "" {
			r := res.Races.Races[0]
			detail = fmt.Sprintf("race: %s / %s: %s\n%v", site(r.First), site(r.Second), r.Missing, r)
		}
	}
	for _, e := range res.Errs {
		if e == nil {
			continue
		}
		var ke *device.KernelError
		var te *actor.TimeoutError
		var mk *store.MissingKeysError
		how := "error"
		switch {
		case strings.Contains(e.Error(), "wrong result"):
			how = "wrong result"
		case errors.As(e, &ke) && strings.Contains(ke.Reason, "timed out"), errors.As(e, &te), errors.As(e, &mk):
			how = "timeout"
		}
		if !contains(caught, how) {
			caught = append(caught, how)
		}
		if detail == "" {
			detail = e.Error()
		}
	}
	return caught, detail
}

// site names where an access came from, briefly.
func site(a sim.Access) string {
	if a.Kernel != "" {
		return fmt.Sprintf("device %d %s block %d %s", a.Device, a.Kernel, a.Block, a.Kind)
	}
	return fmt.Sprintf("device %d %s op %s", a.Device, a.Op, a.Kind)
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func budget(t *testing.T) int {
	if v := os.Getenv("SYMMEM_MUTANT_SCHEDULES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 10000 {
			t.Fatalf("SYMMEM_MUTANT_SCHEDULES=%q: want a number of schedules in [1, 10000]", v)
		}
		return n
	}
	return 200
}

// TestControlsPass: every program passes every check unmutated, on the
// fixed strategies and some random walks, so a kill is the mutant's doing.
func TestControlsPass(t *testing.T) {
	schedules := 8
	if testing.Short() {
		schedules = 3
	}
	done := map[string]bool{}
	for _, m := range mutants() {
		program, name := m.control, m.name+" (control)"
		if program == nil {
			program = m.program
		}
		key := fmt.Sprintf("%p/%d", program, m.world)
		if done[key] {
			continue
		}
		done[key] = true
		for n := 1; n <= schedules; n++ {
			if caught, detail := verdict(m.world, program, nil, n); len(caught) > 0 {
				_, strat := schedule(n)
				t.Fatalf("%s, %s: %v\n%s", name, strat, caught, detail)
			}
		}
	}
}

// TestMutantsAreKilled: each mutant fails some check within the schedule
// budget. The kill table goes to the test log, and as Markdown to the file
// named by SYMMEM_MUTANT_TABLE.
func TestMutantsAreKilled(t *testing.T) {
	longtest.Require(t, "the mutant kill table")
	limit := budget(t)
	var rows []string
	for _, m := range mutants() {
		found, after, how, first := false, 0, "", ""
		for n := 1; n <= limit && !found; n++ {
			caught, detail := verdict(m.world, m.program, m.apply, n)
			if len(caught) > 0 {
				found, after, how = true, n, strings.Join(caught, ", ")
				first = strings.SplitN(detail, "\n", 2)[0]
				_, strat := schedule(n)
				t.Logf("%s: killed by schedule %d (%s): %s\n%s", m.name, n, strat, how, detail)
			}
		}
		if !found {
			t.Errorf("mutant %q survived %d schedules", m.name, limit)
			rows = append(rows, fmt.Sprintf("| %s | no | > %d | | |", m.name, limit))
			continue
		}
		rows = append(rows, fmt.Sprintf("| %s | yes | %d | %s | %s |", m.name, after, how, strings.ReplaceAll(first, "|", "/")))
	}
	table := "| mutant | found | schedules to first find | caught by | first report |\n|---|---|---|---|---|\n" +
		strings.Join(rows, "\n") + "\n"
	t.Logf("kill table (budget %d schedules per mutant):\n%s", limit, table)
	if path := os.Getenv("SYMMEM_MUTANT_TABLE"); path != "" {
		if err := os.WriteFile(path, []byte(table), 0o644); err != nil {
			t.Fatalf("write kill table: %v", err)
		}
	}
}
