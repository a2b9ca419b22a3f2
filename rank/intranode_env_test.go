package rank

import "testing"

// TestIntraNodeOptionsFromEnv: the service is switched on only by
// ENABLE_INTRA_NODE_COMM=1, and the topology check skipped only by
// TEST_INTRA_NODE_COMM=1, as in the reference.
func TestIntraNodeOptionsFromEnv(t *testing.T) {
	for _, c := range []struct {
		enable, test string
		want         IntraNodeOptions
	}{
		{"", "", IntraNodeOptions{}},
		{"1", "", IntraNodeOptions{Enabled: true}},
		{"0", "1", IntraNodeOptions{AssumeFullyConnected: true}},
		{"1", "1", IntraNodeOptions{Enabled: true, AssumeFullyConnected: true}},
		{"true", "yes", IntraNodeOptions{}},
	} {
		t.Setenv("ENABLE_INTRA_NODE_COMM", c.enable)
		t.Setenv("TEST_INTRA_NODE_COMM", c.test)
		if got := IntraNodeOptionsFromEnv(); got != c.want {
			t.Errorf("ENABLE_INTRA_NODE_COMM=%q TEST_INTRA_NODE_COMM=%q: %+v, want %+v", c.enable, c.test, got, c.want)
		}
	}
}
