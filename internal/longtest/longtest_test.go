package longtest

import "testing"

func TestEnabledFollowsEnv(t *testing.T) {
	t.Setenv(Env, "1")
	if !Enabled() {
		t.Fatalf("%s=1: Enabled() = false", Env)
	}
	t.Setenv(Env, "0")
	if Enabled() {
		t.Fatalf("%s=0: Enabled() = true", Env)
	}
}
