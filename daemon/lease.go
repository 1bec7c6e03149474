package daemon

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"netdisk/internal/redishealth"
)

// Run-once work. Nodes sharing a metadata store would otherwise all run the
// same periodic jobs (GC, upload session expiry): wasted work at best, and
// GC on every node at once. Each such job runs under a
// lease in Redis, on one node at a time; the holder renews it, and when it
// dies (kill -9 included) the lease lapses and another node's job starts
// within a lease period.

// DefaultLeaseTTL is how long a job's lease outlives a holder that stopped
// renewing it.
const DefaultLeaseTTL = 15 * time.Second

// renewScript extends the lease only if this node still holds it.
var renewScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0`)

// releaseScript gives the lease up only if this node holds it.
var releaseScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`)

// lease runs jobs under Redis leases named after them.
type lease struct {
	rdb  *redis.Client
	node string
	ttl  time.Duration
	log  *slog.Logger
	// taken are the jobs whose lease this process has held (by name).
	taken *sync.Map
}

// run calls job whenever this node holds the lease name, with a context
// cancelled when the lease is lost (or ctx ends); it returns when ctx ends.
func (l lease) run(ctx context.Context, name string, job func(context.Context)) {
	key := "netdisk:lease:" + name
	tick := time.NewTicker(l.ttl / 3)
	defer tick.Stop()
	var edge redishealth.Edge // failures logged by their edges, not once a tick
	for {
		ok, err := l.rdb.SetNX(ctx, key, l.node, l.ttl).Result()
		switch {
		case err == nil:
			edge.OK(ctx, l.log, "run-once job: Redis answers for the lease again", "job", name)
		case ctx.Err() == nil:
			edge.Failed(ctx, l.log, slog.LevelWarn, "run-once job: cannot reach Redis for the lease", err, "job", name)
		}
		if ok {
			l.hold(ctx, key, name, job, tick)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// hold runs job while renewing the lease; it returns when the job returns,
// the lease is lost or ctx ends, and gives the lease up.
func (l lease) hold(ctx context.Context, key, name string, job func(context.Context), tick *time.Ticker) {
	// Told once per job: taken again after a Redis outage (which the
	// Redis watch told) it is routine.
	lvl := slog.LevelDebug
	if _, again := l.taken.LoadOrStore(name, true); !again {
		lvl = slog.LevelInfo
	}
	l.log.Log(ctx, lvl, "run-once job: lease taken, running here", "job", name, "node", l.node)
	jctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		job(jctx)
	}()
	defer func() {
		cancel()
		<-done
		rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		releaseScript.Run(rctx, l.rdb, []string{key}, l.node)
		rcancel()
	}()
	for {
		select {
		case <-done:
			return
		case <-ctx.Done():
			return
		case <-tick.C:
			n, err := renewScript.Run(ctx, l.rdb, []string{key}, l.node, l.ttl.Milliseconds()).Int()
			if err != nil && !errors.Is(err, redis.Nil) {
				// Not renewed: another node may take the lease once it
				// lapses, so stop before it can.
				l.log.Log(ctx, redishealth.Level(err, slog.LevelWarn), "run-once job: cannot renew the lease; stopping here", "job", name, "err", err)
				return
			}
			if n == 0 {
				l.log.Warn("run-once job: lease lost; stopping here", "job", name)
				return
			}
		}
	}
}
