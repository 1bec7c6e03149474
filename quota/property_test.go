package quota_test

import (
	"fmt"
	"math/rand"
	"testing"
	"time"

	"netdisk/errs"
	"netdisk/quota"
)

// modelSession is what the test expects of one open session.
type modelSession struct {
	user     int64
	declared int64
	chunks   int // declared / chunk size, rounded up
	have     map[int]bool
	received int64
}

const chunkSize = 10

// TestPropertyRandomInterleavings drives random reserve/chunk/merge/abort/
// expire/delete/scan/loss sequences through both ledgers and checks after
// every step that committed usage never exceeds the total and the ledger
// matches the model, and at the end that every byte is where it belongs.
func TestPropertyRandomInterleavings(t *testing.T) {
	seeds, steps := 12, 400
	if testing.Short() {
		seeds, steps = 3, 200
	}
	for _, im := range impls {
		t.Run(im.name, func(t *testing.T) {
			for seed := int64(1); seed <= int64(seeds); seed++ {
				t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { runProperty(t, newEnv(t, im), seed, steps) })
			}
		})
	}
}

func runProperty(t *testing.T, e *env, seed int64, steps int) {
	rng := rand.New(rand.NewSource(seed))
	type modelUser struct {
		id       int64
		total    int64
		finished int64
	}
	users := []*modelUser{}
	for i, total := range []int64{0, 200, 500} {
		users = append(users, &modelUser{id: e.user(fmt.Sprint("u", i), total), total: total})
	}
	byID := map[int64]*modelUser{}
	for _, u := range users {
		byID[u.id] = u
	}
	open := map[string]*modelSession{}
	var order []string // open ids, for deterministic picks
	next := 0
	pick := func() (string, *modelSession) {
		if len(order) == 0 {
			return "", nil
		}
		id := order[rng.Intn(len(order))]
		return id, open[id]
	}
	closeSession := func(id string) {
		delete(open, id)
		for i, x := range order {
			if x == id {
				order = append(order[:i], order[i+1:]...)
				break
			}
		}
	}
	check := func(step int, what string) {
		t.Helper()
		for _, u := range users {
			var uploading, unfinished int64
			for _, s := range open {
				if s.user == u.id {
					uploading += s.declared
					unfinished += s.received
				}
			}
			got := e.usage(u.id)
			want := quota.Usage{Total: u.total, Finished: u.finished, Uploading: uploading, Unfinished: unfinished}
			if got != want {
				t.Fatalf("step %d (%s): user %d ledger %+v, model %+v", step, what, u.id, got, want)
			}
			if u.total > 0 && got.Committed() > u.total {
				t.Fatalf("step %d (%s): committed %d > total %d", step, what, got.Committed(), u.total)
			}
			su := e.sqlUser(u.id)
			if su.Finished != u.finished || su.Unfinished < 0 || su.Unfinished > unfinished {
				t.Fatalf("step %d (%s): sqlite %+v, model finished %d unfinished %d", step, what, su, u.finished, unfinished)
			}
		}
	}
	for step := 0; step < steps; step++ {
		var what string
		switch r := rng.Intn(100); {
		case r < 20:
			what = "reserve"
			u := users[rng.Intn(len(users))]
			declared := int64(1 + rng.Intn(120))
			id := fmt.Sprintf("s%d", next)
			next++
			var committed int64 = u.finished
			for _, s := range open {
				if s.user == u.id {
					committed += s.declared
				}
			}
			err := e.initSession(u.id, id, declared)
			fits := u.total == 0 || committed+declared <= u.total
			switch {
			case fits && err == nil:
				open[id] = &modelSession{user: u.id, declared: declared, chunks: int((declared + chunkSize - 1) / chunkSize), have: map[int]bool{}}
				order = append(order, id)
			case !fits && errs.Is(err, errs.Quota):
			default:
				t.Fatalf("step %d: reserve %d for user %d (committed %d, total %d): %v", step, declared, u.id, committed, u.total, err)
			}
		case r < 55:
			what = "chunk"
			id, s := pick()
			if s == nil {
				continue
			}
			i := rng.Intn(s.chunks)
			n := min(int64(chunkSize), s.declared-int64(i)*chunkSize)
			e.must(e.chunk(s.user, id, i, n))
			if !s.have[i] {
				s.have[i] = true
				s.received += n
			}
		case r < 65:
			what = "merge"
			id, s := pick()
			if s == nil || s.received != s.declared {
				continue
			}
			_, _, err := e.finish(s.user, id, s.declared)
			e.must(err)
			byID[s.user].finished += s.declared
			closeSession(id)
		case r < 72:
			what = "abort/expire"
			id, s := pick()
			if s == nil {
				continue
			}
			_, _, err := e.finish(s.user, id, -1)
			e.must(err)
			closeSession(id)
		case r < 75:
			what = "delete"
			u := users[rng.Intn(len(users))]
			if u.finished == 0 {
				continue
			}
			n := 1 + rng.Int63n(u.finished)
			e.must(e.deleteFile(u.id, n))
			u.finished -= n
		case r < 90:
			what = "scan"
			e.clock.Advance(time.Duration(rng.Intn(4000)) * time.Millisecond)
			_, err := e.l.ScanDue(e.ctx, e.clock.Now())
			e.must(err)
		case r < 93:
			what = "failed flush"
			e.sink.hooks(func([]quota.Flush) error { return fmt.Errorf("crash") }, nil)
			e.clock.Advance(delay)
			e.l.ScanDue(e.ctx, e.clock.Now())
			e.sink.hooks(nil, nil)
		case r < 96:
			what = "drain"
			e.drain()
			for _, u := range users {
				var unfinished int64
				for _, s := range open {
					if s.user == u.id {
						unfinished += s.received
					}
				}
				if got := e.sqlUser(u.id).Unfinished; got != unfinished {
					t.Fatalf("step %d: after drain sqlite unfinished %d, want %d", step, got, unfinished)
				}
			}
		default:
			what = "lose+reconcile"
			e.lose()
			e.must(e.l.Reconcile(e.ctx, e))
		}
		check(step, what)
	}
	// End every session, half merged, half expired; drain.
	for _, id := range append([]string(nil), order...) {
		s := open[id]
		for i := 0; i < s.chunks; i++ {
			n := min(int64(chunkSize), s.declared-int64(i)*chunkSize)
			e.must(e.chunk(s.user, id, i, n))
		}
		if rng.Intn(2) == 0 {
			_, _, err := e.finish(s.user, id, s.declared)
			e.must(err)
			byID[s.user].finished += s.declared
		} else {
			_, _, err := e.finish(s.user, id, -1)
			e.must(err)
		}
		closeSession(id)
	}
	e.drain()
	e.drain()
	check(steps, "end")
	for _, u := range users {
		su, g := e.sqlUser(u.id), e.usage(u.id)
		if su.Unfinished != 0 || g.Unfinished != 0 || g.Uploading != 0 || su.Finished != u.finished {
			t.Fatalf("end: user %d sqlite %+v ledger %+v, model finished %d", u.id, su, g, u.finished)
		}
	}
}
