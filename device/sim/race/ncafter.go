package race

import "github.com/symmem/symmem/device/sim"

// Writes after a non-coherent load. ld.global.nc requires its bytes to
// stay unchanged for the whole lifetime of its kernel, not only until
// the load: a write that comes after the load (by a thread of the same
// kernel, a peer's kernel or the host) is a finding too unless it is
// ordered after the kernel's end (the stream op's completion: a later op
// of the stream, or a host or peer that learned the kernel completed).
// The detector keeps, per kernel launch whose threads loaded by
// ld.global.nc, the epoch of its end once it completed; a write checks
// the nc loads its bytes still hold in the shadow memory against it.

// ncOp is a kernel launch (stream op) whose threads loaded by
// ld.global.nc.
type ncOp struct {
	ended bool
	end   epoch // its completion, once ended
}

// ncKey is the stream op of r, a load's record.
func ncKey(r *rec) opKey { return opKey{r.org.device, r.org.stream, r.org.seq} }

// noteNC records that x's kernel loads by ld.global.nc.
func (d *Detector) noteNC(x *rec) {
	if d.ncOps == nil {
		d.ncOps = map[opKey]*ncOp{}
	}
	if k := ncKey(x); d.ncOps[k] == nil {
		d.ncOps[k] = &ncOp{}
	}
}

// endNC: the stream op of a (an OpEnd, on thread t) completed; if its
// threads loaded by ld.global.nc, its end is t's epoch now.
func (d *Detector) endNC(a *sim.Access, t *thread) {
	if op := d.ncOps[opKey{a.Device, a.Stream, a.Seq}]; op != nil {
		op.ended = true
		op.end = epoch{slot: int32(t.slot), clock: t.vc.get(t.slot)}
	}
}

// checkNCAfter reports each load by ld.global.nc of the bytes of x, a
// write by t to granules [lo, hi), whose kernel had not ended before x:
// still running, or ended without t knowing it.
func (d *Detector) checkNCAfter(sh *shadow, x *rec, t *thread, lo, hi uint64) {
	d.pairs.reset()
	sh.each(lo, hi, func(s *state) {
		if s == nil {
			return
		}
		for _, y := range s.accs {
			r := y.r
			if y.write() || !r.nc || r.shared != x.shared || r.off >= x.off+x.size || x.off >= r.off+r.size {
				continue
			}
			op := d.ncOps[ncKey(r)]
			if op == nil || op.ended && op.end.before(t.vc) {
				continue
			}
			d.reportNCAfter(r, x)
		}
	})
}

// reportNCAfter records that x wrote bytes the ld.global.nc y read,
// after it and before y's kernel ended.
func (d *Detector) reportNCAfter(y, x *rec) {
	d.add(y, x, true, func() string {
		return "a write after an ld.global.nc of the same bytes, before the load's kernel ended: ld.global.nc needs its bytes unchanged for the kernel's whole lifetime (the non-coherent path may keep or fetch them at any time); load them with ld.global, ld.relaxed or ld.acquire, or write them only after the kernel completed"
	})
}
