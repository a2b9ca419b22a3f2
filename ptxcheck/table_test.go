package ptxcheck

import (
	"strings"
	"testing"
)

// hopPTX stores entry 1's value of a table of {pointer, u32} entries
// through entry 1's pointer.
const hopPTX = `.version 8.0
.target sm_90
.address_size 64

.visible .entry hop(.param .u64 tbl)
{
	.reg .b32 %r<2>;
	.reg .b64 %rd<3>;
	ld.param.u64 %rd1, [tbl];
	cvta.to.global.u64 %rd1, %rd1;
	ld.global.u64 %rd2, [%rd1+16];
	ld.global.u32 %r1, [%rd1+24];
	st.global.u32 [%rd2], %r1;
	ret;
}
`

// TestTableBuffer: a table buffer is a device array of structs packed
// after the ranks meet, so its entries can hold peers' addresses (as
// MSCCL++'s channel handles do): entry 1 of rank r points at word 1 of
// rank r+1's data and holds r*10 + 1, which the kernel stores there.
// Mistakes in a table are named before anything runs.
func TestTableBuffer(t *testing.T) {
	src, err := Parse("hop.ptx", hopPTX)
	if err != nil {
		t.Fatal(err)
	}
	harness := `{"worlds": "2-4", "buffers": [
		{"name": "data", "kind": "signal", "bytes": 64},
		{"name": "tbl", "kind": "table", TABLE}],
		"steps": [{"launch": {"entry": "hop", "grid": 1, "block": 1, "params": [{"ptr": "tbl"}]}}, {"sync": true}, {"barrier": true},
		{"check": {"buffer": "data", "dtype": "u32", "offset": 4, "count": 1, "value": "((rank + world - 1) % world)*10 + 1"}}]}`
	table := `"table": {"count": "world", "entry": [{"ptr": "data", "rank": "(rank + i) % world", "offset": "4*i"}, {"u32": "rank*10 + i"}]}`
	rep, err := RunProgram(program(t, strings.Replace(harness, "TABLE", table, 1)), src, Options{Seeds: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Runs) != 6 || len(rep.Findings) != 0 {
		t.Fatalf("%d runs, findings %+v; want 6 runs and none", len(rep.Runs), rep.Findings)
	}
	// The kernel reads entry 1 of a one-entry table: past the buffer's end.
	one := strings.Replace(table, `"count": "world"`, `"count": 1`, 1)
	rep, err = RunProgram(program(t, strings.Replace(harness, "TABLE", one, 1)), src, Options{Worlds: []int{2}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Findings) == 0 {
		t.Fatal("a kernel reading past a one-entry table found nothing")
	}
	for _, c := range []struct{ table, want string }{
		{`"bytes": 64`, "a table buffer needs a table"},
		{`"bytes": 64, ` + table, "leave out bytes and init"},
		{`"table": {"count": 2, "entry": [{"ptrs": "data"}, {"ptr": "tbl", "rank": 1}]}`, "rank of table buffer"},
		{`"table": {"count": 2, "entry": [{"ptrarray": "tbl", "len": 8}]}`, "ptrarray of table buffer"},
		{`"table": {"count": "", "entry": [{"u32": 1}]}`, "count"},
	} {
		_, err := RunProgram(program(t, strings.Replace(harness, "TABLE", c.table, 1)), src, Options{Worlds: []int{2}})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("table %s: error %v, want one naming %q", c.table, err, c.want)
		}
	}
	plain := `{"buffers": [{"name": "p", "kind": "plain", "bytes": 8, "table": {"count": 1, "entry": [{"u32": 1}]}}], "steps": []}`
	if _, err := RunProgram(program(t, plain), src, Options{Worlds: []int{2}}); err == nil || !strings.Contains(err.Error(), "only a table buffer has a table") {
		t.Errorf("a plain buffer with a table: %v", err)
	}
}
