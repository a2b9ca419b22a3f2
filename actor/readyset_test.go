package actor

import (
	"testing"

	"pgregory.net/rapid"
)

// sortedRef is the reference for taskSet: a sorted slice of tasks,
// searched by a scan.
type sortedRef struct{ l []*Task }

func (r *sortedRef) pos(id int) int {
	i := 0
	for i < len(r.l) && r.l[i].id < id {
		i++
	}
	return i
}

func (r *sortedRef) add(t *Task) {
	i := r.pos(t.id)
	r.l = append(r.l, nil)
	copy(r.l[i+1:], r.l[i:])
	r.l[i] = t
}

func (r *sortedRef) remove(t *Task) bool {
	for i, u := range r.l {
		if u == t {
			r.l = append(r.l[:i], r.l[i+1:]...)
			return true
		}
	}
	return false
}

// TestTaskSetMatchesASortedList drives a taskSet through random
// additions (new IDs above the others, and old IDs coming back below
// them), removals, trims and queries, and checks every answer against a
// sorted list.
func TestTaskSetMatchesASortedList(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		var set taskSet
		var ref sortedRef
		tasks := map[int]*Task{} // every task made, by ID
		next := rapid.IntRange(0, 300).Draw(rt, "first")
		task := func(id int) *Task {
			if tasks[id] == nil {
				tasks[id] = &Task{id: id}
			}
			return tasks[id]
		}
		floor := 0 // no ID below it is added any more
		for range rapid.IntRange(1, 400).Draw(rt, "ops") {
			switch rapid.IntRange(0, 7).Draw(rt, "op") {
			case 0, 1: // a new task, IDs growing, now and then by a jump
				next += rapid.IntRange(1, 3).Draw(rt, "gap")
				if rapid.IntRange(0, 20).Draw(rt, "jump") == 0 {
					next += rapid.IntRange(64, 2000).Draw(rt, "far")
				}
				tk := task(next)
				set.add(tk)
				ref.add(tk)
			case 2: // an older task back in the set
				if floor > next {
					break
				}
				id := rapid.IntRange(floor, next).Draw(rt, "old")
				tk := task(id)
				if ref.pos(id) < len(ref.l) && ref.l[ref.pos(id)] == tk {
					break
				}
				set.add(tk)
				ref.add(tk)
			case 3, 4: // a removal, of a task in the set or not
				var tk *Task
				if len(ref.l) > 0 && rapid.Bool().Draw(rt, "present") {
					tk = ref.l[rapid.IntRange(0, len(ref.l)-1).Draw(rt, "victim")]
				} else {
					tk = task(rapid.IntRange(floor, next+1).Draw(rt, "absent?"))
				}
				want := ref.remove(tk)
				if got := set.remove(tk); got != want {
					rt.Fatalf("remove %d: %v, want %v", tk.id, got, want)
				}
			case 5: // trim below the lowest ID present
				f := next + 1
				if len(ref.l) > 0 {
					f = ref.l[0].id
				}
				f = rapid.IntRange(floor, f).Draw(rt, "floor")
				floor = f
				set.trim(f)
			case 6: // rank of any ID
				id := rapid.IntRange(-5, next+70).Draw(rt, "id")
				if got, want := set.rank(id), ref.pos(id); got != want {
					rt.Fatalf("rank(%d) = %d, want %d (set %v)", id, got, want, ids(ref.l))
				}
			case 7: // the task at a position
				if len(ref.l) == 0 {
					break
				}
				k := rapid.IntRange(0, len(ref.l)-1).Draw(rt, "k")
				if got := set.at(k); got != ref.l[k] {
					rt.Fatalf("at(%d) = task %d, want %d (set %v)", k, got.id, ref.l[k].id, ids(ref.l))
				}
			}
			if set.len() != len(ref.l) {
				rt.Fatalf("len %d, want %d", set.len(), len(ref.l))
			}
		}
		// Every task at its position, every position's ID ranked, the
		// list in order.
		got := set.appendTo(nil)
		if len(got) != len(ref.l) {
			rt.Fatalf("appendTo gives %v, want %v", ids(got), ids(ref.l))
		}
		for k, tk := range ref.l {
			if got[k] != tk || set.at(k) != tk || set.rank(tk.id) != k || !set.has(tk) {
				rt.Fatalf("task %d at %d: appendTo %d, at %d, rank %d, has %v", tk.id, k, got[k].id, set.at(k).id, set.rank(tk.id), set.has(tk))
			}
		}
	})
}
