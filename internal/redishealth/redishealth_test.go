package redishealth

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"netdisk/errs"
	"netdisk/testutil"
)

// refused is the error of a command to a Redis that is not there.
var refused error = &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNREFUSED}

func newWatch(t *testing.T, clock *testutil.Clock) (*Watch, *bytes.Buffer) {
	var buf bytes.Buffer
	w := New("127.0.0.1:1", slog.New(slog.NewTextHandler(&buf, nil)), clock.Now)
	w.started = true // as after a Check that found Redis up
	watches.Store(w, struct{}{})
	t.Cleanup(w.Detach)
	return w, &buf
}

func lines(buf *bytes.Buffer) []string {
	s := strings.TrimSpace(buf.String())
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// An outage is two lines however many calls fail; a Redis that flaps gets
// Burst lines at once, then one per Refill, and the last line tells the
// state it ended in.
func TestWatchTransitionsAndFlapping(t *testing.T) {
	clock := testutil.NewClock(time.Unix(1e9, 0))
	w, buf := newWatch(t, clock)
	call := func(err error) { w.observe(w.begin(), false, err) }

	for range 100 {
		call(refused)
	}
	call(nil)
	for range 100 {
		call(nil)
	}
	if got := lines(buf); len(got) != 2 || !strings.Contains(got[0], "redis unreachable") || !strings.Contains(got[1], "redis reachable again") ||
		!strings.Contains(got[1], "failed_calls=100") {
		t.Fatalf("one outage of 100 failed calls: %d lines, want 2:\n%s", len(got), buf)
	}

	// Flapping: 50 outages within a moment.
	buf.Reset()
	for range 50 {
		call(refused)
		call(nil)
	}
	if got := lines(buf); len(got) != Burst-2 {
		t.Fatalf("50 flaps at once after one outage: %d lines, want %d (the burst left):\n%s", len(got), Burst-2, buf)
	}
	buf.Reset()
	call(refused) // down now, not said yet: no budget
	if got := lines(buf); len(got) != 0 {
		t.Fatalf("a transition past the budget was logged:\n%s", buf)
	}
	clock.Advance(Refill)
	call(refused) // a later call finds a line allowed: the state is told
	if got := lines(buf); len(got) != 1 || !strings.Contains(got[0], "redis unreachable") {
		t.Fatalf("after a refill, a failing Redis: %q, want the unreachable line", got)
	}
}

// A failure begun before the last change is old news (a call in flight
// when Redis came back); the caller's cancellation is no news.
func TestWatchIgnoresStaleAndCanceled(t *testing.T) {
	clock := testutil.NewClock(time.Unix(1e9, 0))
	w, buf := newWatch(t, clock)
	w.observe(w.begin(), false, refused)
	inFlight := w.begin()
	w.observe(w.begin(), false, nil) // back
	w.observe(inFlight, false, refused)
	w.observe(w.begin(), false, context.Canceled)
	w.observe(w.begin(), false, redis.Nil) // an answer
	if got := lines(buf); len(got) != 2 || w.Down() {
		t.Fatalf("down, up, then a stale failure and a cancellation: %d lines, down=%v:\n%s", len(got), w.Down(), buf)
	}
}

// Level quiets Unavailable failures while a watch knows its Redis is away
// and for Tail after, and nothing else.
func TestLevel(t *testing.T) {
	clock := testutil.NewClock(time.Unix(1e9, 0))
	w, _ := newWatch(t, clock)
	unavailable := errs.E("quota.Ready", errs.Unavailable, "", errors.New("quota ledger unreachable"))
	other := errs.E("quota.Ready", errs.Other, "", errors.New("WRONGTYPE"))
	if got := Level(unavailable, slog.LevelWarn); got != slog.LevelWarn {
		t.Fatalf("Redis up: %v, want WARN", got)
	}
	w.observe(w.begin(), false, refused)
	if Level(unavailable, slog.LevelWarn) != slog.LevelDebug || Level(refused, slog.LevelWarn) != slog.LevelDebug {
		t.Fatal("Redis down: an Unavailable failure not quieted")
	}
	if got := Level(other, slog.LevelError); got != slog.LevelError {
		t.Fatalf("Redis down, another kind of failure: %v, want ERROR", got)
	}
	w.observe(w.begin(), false, nil)
	if got := Level(unavailable, slog.LevelWarn); got != slog.LevelDebug {
		t.Fatalf("just back: %v, want DEBUG (the outage's tail)", got)
	}
	clock.Advance(Tail)
	if got := Level(unavailable, slog.LevelWarn); got != slog.LevelWarn {
		t.Fatalf("back for Tail: %v, want WARN", got)
	}
}

// A job failing every tick logs its first failure and its recovery, not
// every failure; during a known Redis outage both at debug.
func TestEdge(t *testing.T) {
	clock := testutil.NewClock(time.Unix(1e9, 0))
	w, _ := newWatch(t, clock)
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	var e Edge
	ctx := context.Background()
	unavailable := errs.E("lock.Expire", errs.Unavailable, "", errors.New("lock state unreachable"))
	for range 100 {
		e.Failed(ctx, log, slog.LevelWarn, "lock: cannot expire leases", unavailable)
	}
	e.OK(ctx, log, "lock: leases expire again")
	e.OK(ctx, log, "lock: leases expire again")
	got := lines(&buf)
	if len(got) != 2 || !strings.Contains(got[0], "level=WARN") || !strings.Contains(got[1], "level=INFO") || !strings.Contains(got[1], "failures=100") {
		t.Fatalf("100 failures then successes, Redis up: %q, want a warning and a recovery", got)
	}

	buf.Reset()
	w.observe(w.begin(), false, refused) // the Watch knows Redis is away
	for range 100 {
		e.Failed(ctx, log, slog.LevelWarn, "lock: cannot expire leases", unavailable)
	}
	w.observe(w.begin(), false, nil)
	e.OK(ctx, log, "lock: leases expire again")
	got = lines(&buf)
	if len(got) != 2 || !strings.Contains(got[0], "level=DEBUG") || !strings.Contains(got[1], "level=DEBUG") {
		t.Fatalf("100 failures during a known outage: %q, want two debug lines", got)
	}
}

// go-redis's own lines go through slog, at debug while Redis is known to be
// away, and no faster than the budget.
func TestLogger(t *testing.T) {
	clock := testutil.NewClock(time.Unix(1e9, 0))
	var buf bytes.Buffer
	w := New("127.0.0.1:1", slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})), clock.Now)
	w.started = true
	l := Logger{w}
	w.observe(w.begin(), false, refused)
	buf.Reset()
	for range 50 {
		l.Printf(context.Background(), "redis: connection pool: failed to dial after %d attempts: %v", 5, refused)
	}
	got := lines(&buf)
	if len(got) != Burst {
		t.Fatalf("50 go-redis lines at once: %d logged, want %d", len(got), Burst)
	}
	for _, g := range got {
		if !strings.Contains(g, `"level":"DEBUG","msg":"go-redis: connection pool: failed to dial after 5 attempts`) {
			t.Fatalf("go-redis line during an outage: %s", g)
		}
	}
}
