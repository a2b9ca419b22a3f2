package race_test

import (
	"testing"

	"github.com/symmem/symmem/conformance"
	"github.com/symmem/symmem/rank"
)

func TestSmoke(t *testing.T) {
	for _, world := range []int{2, 3, 4, 5} {
		for _, c := range conformance.Cases(conformance.Options{Cycles: 3, Seed: 1}) {
			if !c.Fits(world) {
				continue
			}
			for seed := uint64(1); seed <= 4; seed++ {
				res, err := rank.Simulate(rank.SimConfig{World: world, Seed: seed, RaceDetector: true}, c.Program)
				if err != nil {
					t.Fatalf("%s w%d s%d: %v", c.Name, world, seed, err)
				}
				if res.Races != nil {
					t.Errorf("%s w%d s%d: %d races, first %v", c.Name, world, seed, res.Races.Total, res.Races.Races[0])
				} else if err := res.Err(); err != nil {
					t.Errorf("%s w%d s%d: %v", c.Name, world, seed, err)
				}
			}
		}
	}
}
