// Command lock measures the per-operation FIFO lock manager,
// with the in-process state and the Redis state side by side:
//
//  1. acquire/release pairs per second, uncontended (each worker its own
//     key);
//  2. hand-overs per second on one key with 100 waiters: the holder unlocks
//     with a failure, the queue head claims, the old holder queues again
//     (so 100 stay waiting);
//  3. acquire/release per second across 10,000 keys (workers pick keys at
//     random, so some find them held and queue, then leave);
//  4. wake-up latency from an unlock to the waiter's SSE event, over HTTP
//     through a real daemon (daemon.Open, in this process) — for Redis,
//     the holder on one daemon and the waiter streaming from another.
//
// Run: go run ./bench/lock [-ops 20000 -workers 8 -wakeups 300 -redis URL]
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"netdisk/bench/internal/benchredis"
	"netdisk/client"
	"netdisk/daemon"
	"netdisk/errs"
	"netdisk/lock"
)

func main() {
	ops := flag.Int("ops", 20000, "operations per measurement")
	workers := flag.Int("workers", 8, "concurrent callers")
	wakeups := flag.Int("wakeups", 300, "unlock→event round trips measured")
	redisURL := benchredis.Flag()
	flag.Parse()
	log.SetFlags(0)
	ctx := context.Background()
	rdb, url, stopRedis, err := benchredis.Connect(*redisURL)
	if err != nil {
		log.Fatal(err)
	}
	// Daemons first (they use Redis), then Redis.
	stop := func() { runCleanups(); stopRedis() }
	cleanup = stop
	defer stop()

	fmt.Printf("lock benchmark: %d ops per figure, %d workers\n\n", *ops, *workers)
	fmt.Printf("%-44s %14s %14s\n", "", "in-process", "redis")
	row := func(name string, f func(*lock.Manager) float64) {
		var out []string
		for i, kind := range []string{"memory", "redis"} {
			var st lock.State = lock.NewMemory()
			if kind == "redis" {
				rdb.FlushDB(ctx)
				st = lock.NewRedis(rdb, "bench:"+strconv.Itoa(i)+":")
			}
			m, err := lock.NewManager(ctx, lock.Config{State: st, MaxQueue: 1 << 20, MaxUserWait: 1 << 20})
			if err != nil {
				fatal(err)
			}
			out = append(out, fmt.Sprintf("%10.0f op/s", f(m)))
			m.Close()
		}
		fmt.Printf("%-44s %14s %14s\n", name, out[0], out[1])
	}
	row("acquire+release, uncontended", func(m *lock.Manager) float64 { return uncontended(ctx, m, *ops, *workers) })
	row("hand-over with 100 waiters on one key", func(m *lock.Manager) float64 { return handovers(ctx, m, *ops/4, 100) })
	row("acquire+release across 10,000 keys", func(m *lock.Manager) float64 { return manyKeys(ctx, m, *ops, *workers, 10000) })

	fmt.Printf("\nwake-up latency, unlock → waiter's SSE event (HTTP, %d round trips):\n", *wakeups)
	for _, kind := range []string{"in-process", "redis, 2 daemons"} {
		var a, b string
		if kind == "in-process" {
			a = startDaemon(ctx, "")
			b = a
		} else {
			rdb.FlushDB(ctx)
			a, b = startDaemon(ctx, url), startDaemon(ctx, url)
		}
		p50, p99 := wakeLatency(ctx, a, b, *wakeups)
		fmt.Printf("  %-20s p50 %8.3f ms   p99 %8.3f ms\n", kind, ms(p50), ms(p99))
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func node(i int) lock.Node { return lock.Node{User: "1", ID: "n" + strconv.Itoa(i)} }

func parallel(workers, ops int, f func(w, i int)) float64 {
	var wg sync.WaitGroup
	start := time.Now()
	per := ops / workers
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range per {
				f(w, i)
			}
		}()
	}
	wg.Wait()
	return float64(per*workers) / time.Since(start).Seconds()
}

func uncontended(ctx context.Context, m *lock.Manager, ops, workers int) float64 {
	return parallel(workers, ops, func(w, _ int) {
		res := "key" + strconv.Itoa(w)
		if r, err := m.TryLock(ctx, "pull", res, node(w)); err != nil || r.Status != lock.Acquired {
			fatalf("TryLock: %v %v", r.Status, err)
		}
		if err := m.Unlock(ctx, "pull", res, node(w), nil); err != nil {
			fatal(err)
		}
	})
}

func handovers(ctx context.Context, m *lock.Manager, ops, waiters int) float64 {
	holder := 0
	if _, err := m.TryLock(ctx, "pull", "hot", node(0)); err != nil {
		fatal(err)
	}
	q := make([]int, 0, waiters+1)
	for i := 1; i <= waiters; i++ {
		if _, err := m.TryLock(ctx, "pull", "hot", node(i)); err != nil {
			fatal(err)
		}
		q = append(q, i)
	}
	start := time.Now()
	for range ops {
		if err := m.Unlock(ctx, "pull", "hot", node(holder), io.EOF); err != nil {
			fatal(err)
		}
		next := q[0]
		q = q[1:]
		if r, err := m.TryLock(ctx, "pull", "hot", node(next)); err != nil || r.Status != lock.Acquired {
			fatalf("claim: %v %v", r.Status, err)
		}
		if r, err := m.TryLock(ctx, "pull", "hot", node(holder)); err != nil || r.Status != lock.Queued || r.Position != waiters {
			fatalf("requeue: %+v %v", r, err)
		}
		q = append(q, holder)
		holder = next
	}
	return float64(ops) / time.Since(start).Seconds()
}

func manyKeys(ctx context.Context, m *lock.Manager, ops, workers, keys int) float64 {
	return parallel(workers, ops, func(w, _ int) {
		res := "k" + strconv.Itoa(rand.IntN(keys))
		r, err := m.TryLock(ctx, "pull", res, node(w))
		if err != nil {
			fatal(err)
		}
		// Held or queued: end it either way (success, or leaving the
		// queue; a queue dissolved meanwhile by its holder's success
		// answers Conflict).
		if r.Status == lock.Acquired || r.Status == lock.Queued {
			if err := m.Unlock(ctx, "pull", res, node(w), nil); err != nil && !errs.Is(err, errs.Conflict) {
				fatal(err)
			}
		}
	})
}

// startDaemon runs a daemon in this process on a free port; its address.
func startDaemon(ctx context.Context, redisURL string) string {
	dir, err := os.MkdirTemp("", "bench-lock-")
	if err != nil {
		fatal(err)
	}
	addCleanup(func() { os.RemoveAll(dir) })
	ready := filepath.Join(dir, "ready")
	d, err := daemon.Open(ctx, daemon.Options{DataDir: dir, Listen: "127.0.0.1:0", ChunkSize: 1 << 20,
		AdminPass: "bench-pass", Out: io.Discard, Redis: redisURL, ReadyFile: ready,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		fatal(err)
	}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { d.Serve(sctx); close(done) }()
	addCleanup(func() { cancel(); <-done; d.Close() })
	for {
		if b, err := os.ReadFile(ready); err == nil && len(b) > 0 {
			return "http://" + strings.TrimSpace(string(b))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// wakeLatency: the holder on daemon a, the waiter streaming from daemon b.
func wakeLatency(ctx context.Context, a, b string, n int) (p50, p99 time.Duration) {
	ca, cb := client.New(a, "admin", "bench-pass"), client.New(b, "admin", "bench-pass")
	res := client.PathResource("/wake")
	key := lock.Key("update", res)
	s, err := cb.LockEvents(ctx, "waiter", key)
	if err != nil {
		fatal(err)
	}
	defer s.Close()
	if ev, err := s.Next(); err != nil || ev.Event != "state" {
		fatalf("first event: %+v %v", ev, err)
	}
	var lat []time.Duration
	for range n {
		if r, err := ca.TryLock(ctx, "update", res, "holder", ""); err != nil || lock.Status(r.Status) != lock.Acquired {
			fatalf("holder: %+v %v", r, err)
		}
		if r, err := cb.TryLock(ctx, "update", res, "waiter", ""); err != nil || lock.Status(r.Status) != lock.Queued {
			fatalf("waiter: %+v %v", r, err)
		}
		t0 := time.Now()
		if err := ca.Unlock(ctx, "update", res, "holder", false); err != nil {
			fatal(err)
		}
		ev, err := s.Next()
		if err != nil || ev.Event != "granted" {
			fatalf("event: %+v %v", ev, err)
		}
		lat = append(lat, time.Since(t0))
		if err := cb.Unlock(ctx, "update", res, "waiter", true); err != nil {
			fatal(err)
		}
	}
	slices.Sort(lat)
	return lat[len(lat)/2], lat[len(lat)*99/100]
}

// cleanups stop the daemons a run started, last first.
var (
	cleanupMu sync.Mutex
	cleanups  []func()
)

func addCleanup(f func()) {
	cleanupMu.Lock()
	cleanups = append(cleanups, f)
	cleanupMu.Unlock()
}

func runCleanups() {
	cleanupMu.Lock()
	fs := cleanups
	cleanups = nil
	cleanupMu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
}

// cleanup stops a private redis-server before a fatal exit.
var cleanup = func() {}

func fatal(v ...any) { cleanup(); log.Fatal(v...) }

func fatalf(f string, v ...any) { cleanup(); log.Fatalf(f, v...) }
