package litmus

import (
	"testing"

	"github.com/symmem/symmem/device/sim/memmodel"
)

// TestRaces: the model's data races (conflicting accesses neither morally
// strong nor ordered by causality in some allowed execution).
func TestRaces(t *testing.T) {
	const head = "PTX T\n{ x=0; f=0; }\n P0@cta 0,gpu 0 | P1@cta 1,gpu 0 ;\n"
	for _, c := range []struct {
		name, body string
		race       bool
	}{
		{"message passing, fence after the data", `
 st.weak x, 1        | ld.relaxed.sys r0, f ;
 membar.sys          | bne r0, 1, LC00      ;
 st.relaxed.sys f, 1 | membar.sys           ;
                     | ld.weak r1, x        ;
                     | LC00:                ;
`, false},
		{"message passing, fence before the data (shortcut A)", `
 membar.sys          | ld.relaxed.sys r0, f ;
 st.weak x, 1        | bne r0, 1, LC00      ;
 st.relaxed.sys f, 1 | membar.sys           ;
                     | ld.weak r1, x        ;
                     | LC00:                ;
`, true},
		{"release and acquire", `
 st.weak x, 1        | ld.acquire.sys r0, f ;
 st.release.sys f, 1 | bne r0, 1, LC00      ;
                     | ld.weak r1, x        ;
                     | LC00:                ;
`, false},
		{"release and acquire at cta scope across CTAs", `
 st.weak x, 1        | ld.acquire.cta r0, f ;
 st.release.cta f, 1 | bne r0, 1, LC00      ;
                     | ld.weak r1, x        ;
                     | LC00:                ;
`, true},
		{"strong accesses only", `
 st.relaxed.gpu x, 1 | ld.relaxed.gpu r0, x ;
`, false},
	} {
		test, err := Parse(head + c.body + "exists (P1:r0 == 1)")
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		res, err := Run(test, memmodel.Options{})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got := false
		for _, r := range res.Explored.Races {
			if r.First.Loc == "x" && r.First.Thread != r.Second.Thread && (r.First.Write || r.Second.Write) {
				got = true
			}
		}
		if got != c.race {
			t.Errorf("%s: race on x = %v, want %v (races %v)", c.name, got, c.race, res.Explored.Races)
		}
	}
	// Shared memory without bar.sync races; with it, it does not.
	for file, want := range map[string]bool{"SB-shared-no-bar.litmus": true, "SB-shared-bar.litmus": false} {
		test, err := ParseFile("testdata/" + file)
		if err != nil {
			t.Fatal(err)
		}
		res, err := Run(test, memmodel.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if got := len(res.Explored.Races) > 0; got != want {
			t.Errorf("%s: races %v, want a race: %v", file, res.Explored.Races, want)
		}
	}
}
