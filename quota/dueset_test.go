package quota_test

import (
	"testing"

	"netdisk/quota"
)

// A tick of the embedded ledger looks at the due tasks only, as the Redis
// ZSET's range query does, not at every open session (seed 001 rejects the
// scan of every session on each tick).
func TestMemoryScanVisitsOnlyDueTasks(t *testing.T) {
	e := newEnv(t, impls[0])
	m := e.l.(*quota.Memory)
	u := e.user("ann", 0)
	const early, late = 5, 200
	for i := range early + late {
		e.must(e.initSession(u, up(i), 10))
	}
	for i := range early {
		e.must(e.chunk(u, up(i), 0, 1))
	}
	e.clock.Advance(delay / 2)
	for i := early; i < early+late; i++ {
		e.must(e.chunk(u, up(i), 0, 1))
	}
	e.clock.Advance(delay / 2) // the early tasks are due now, the late ones in delay/2

	n, err := e.l.ScanDue(e.ctx, e.clock.Now())
	e.must(err)
	if n != early || m.Visited() != early {
		t.Fatalf("scan flushed %d and looked at %d tasks; want %d and %d (%d open sessions)", n, m.Visited(), early, early, early+late)
	}
	if got := e.sqlUser(u).Unfinished; got != early {
		t.Fatalf("SQLite unfinished %d after the first scan, want %d", got, early)
	}

	// Nothing is due: a tick looks at nothing.
	n, err = e.l.ScanDue(e.ctx, e.clock.Now())
	e.must(err)
	if n != 0 || m.Visited() != early {
		t.Fatalf("idle tick flushed %d and looked at %d more tasks", n, m.Visited()-early)
	}

	e.clock.Advance(delay / 2)
	n, err = e.l.ScanDue(e.ctx, e.clock.Now())
	e.must(err)
	if n != late || m.Visited() != early+late {
		t.Fatalf("second scan flushed %d, looked at %d tasks in all; want %d and %d", n, m.Visited(), late, early+late)
	}
	if got := e.sqlUser(u).Unfinished; got != early+late {
		t.Fatalf("SQLite unfinished %d, want %d", got, early+late)
	}

}
