// Command quota measures the quota ledger (seed 001's claim: N chunks → 1
// database write):
//
//  1. writes to the SQLite users table per uploaded chunk: flushing
//     use_space_unfinished on every chunk (the sink without the ledger's
//     delay) vs through the ledger's delayed flush (chunks arrive every
//     -interval of simulated time, the scanner runs every simulated second);
//  2. chunk-accounting operations per second through the embedded ledger and
//     the Redis ledger (a redis-server started on a free loopback port, or
//     -redis URL).
//
// Run: go run ./bench/quota [-uploads 16 -chunks 64 -ops 20000 -workers 8]
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"netdisk/bench/internal/benchredis"
	"netdisk/meta"
	"netdisk/quota"
	"netdisk/testutil"
)

type truth struct{}

func (truth) OpenSessions(context.Context) ([]quota.Session, error) { return nil, nil }

func main() {
	uploads := flag.Int("uploads", 16, "concurrent uploads in the write comparison")
	chunks := flag.Int("chunks", 64, "chunks per upload")
	interval := flag.Duration("interval", 200*time.Millisecond, "simulated time between two chunks of an upload")
	delay := flag.Duration("delay", 5*time.Second, "ledger flush delay")
	ops := flag.Int("ops", 20000, "chunk operations per ledger in the throughput run")
	workers := flag.Int("workers", 8, "concurrent clients in the throughput run")
	redisURL := benchredis.Flag()
	flag.Parse()
	log.SetFlags(0)
	ctx := context.Background()

	dir, err := os.MkdirTemp("", "bench-quota-")
	if err != nil {
		fatal(err)
	}
	defer os.RemoveAll(dir)

	fmt.Printf("quota ledger benchmark: %d uploads x %d chunks, a chunk every %v per upload, delay %v\n\n", *uploads, *chunks, *interval, *delay)

	// 1a. Every chunk updates SQLite: each is flushed through the sink at
	// once, as a ledger without the delay would.
	db, uid := openDB(ctx, filepath.Join(dir, "direct.db"))
	directSink := quota.NewSQLiteSink(db, nil)
	start := time.Now()
	for c := 0; c < *chunks; c++ {
		for u := 0; u < *uploads; u++ {
			f := quota.Flush{User: uid, Upload: "w" + strconv.Itoa(u), Seq: int64(c + 1), Target: int64(c+1) << 22}
			if err := directSink.Flush(ctx, []quota.Flush{f}); err != nil {
				fatal(err)
			}
		}
	}
	direct := time.Since(start)
	n := directSink.Writes()
	db.Close()
	total := *uploads * *chunks
	fmt.Printf("per-chunk SQLite update : %6d chunks -> %6d users writes (%.3f writes/chunk), %v, %.0f chunks/s\n",
		total, n, float64(n)/float64(total), direct.Round(time.Millisecond), float64(total)/direct.Seconds())

	// 1b. Through the ledger (embedded and Redis give the same count).
	rdb, _, stop, err := benchredis.Connect(*redisURL)
	if err != nil {
		fatal(err)
	}
	cleanup = stop
	defer stop()
	for _, kind := range []string{"embedded", "redis"} {
		db, uid := openDB(ctx, filepath.Join(dir, kind+".db"))
		clock := testutil.NewClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
		sink := quota.NewSQLiteSink(db, clock.Now)
		l := newLedger(ctx, kind, rdb, quota.Config{Sink: sink, Clock: clock, Delay: *delay})
		for u := 0; u < *uploads; u++ {
			if _, err := l.Reserve(ctx, uid, "w"+strconv.Itoa(u), int64(*chunks)<<22); err != nil {
				fatal(err)
			}
		}
		start := time.Now()
		lastScan := clock.Now()
		for c := 0; c < *chunks; c++ {
			for u := 0; u < *uploads; u++ {
				if err := l.Chunk(ctx, uid, "w"+strconv.Itoa(u), c, 4<<20); err != nil {
					fatal(err)
				}
			}
			clock.Advance(*interval)
			if clock.Now().Sub(lastScan) >= time.Second {
				if _, err := l.ScanDue(ctx, clock.Now()); err != nil {
					fatal(err)
				}
				lastScan = clock.Now()
			}
		}
		clock.Advance(*delay + time.Second)
		if _, err := l.ScanDue(ctx, clock.Now()); err != nil {
			fatal(err)
		}
		took := time.Since(start)
		u, err := db.UserByID(ctx, uid)
		if err != nil {
			fatal(err)
		}
		if want := int64(total) << 22; u.Unfinished != want {
			fatalf("%s: SQLite unfinished %d, want %d", kind, u.Unfinished, want)
		}
		w := sink.Writes()
		fmt.Printf("ledger (%-8s)       : %6d chunks -> %6d users writes (%.3f writes/chunk, %.1f chunks/write), %v, %.0f chunks/s; SQLite exact\n",
			kind, total, w, float64(w)/float64(total), float64(total)/float64(w), took.Round(time.Millisecond), float64(total)/took.Seconds())
		db.Close()
	}

	// 2. Chunk-accounting throughput.
	fmt.Printf("\nchunk accounting throughput: %d Chunk calls, %d workers (one upload each)\n", *ops, *workers)
	for _, kind := range []string{"embedded", "redis"} {
		db, uid := openDB(ctx, filepath.Join(dir, kind+"-ops.db"))
		sink := quota.NewSQLiteSink(db, nil)
		l := newLedger(ctx, kind, rdb, quota.Config{Sink: sink})
		per := *ops / *workers
		for w := 0; w < *workers; w++ {
			if _, err := l.Reserve(ctx, uid, "t"+strconv.Itoa(w), int64(per)); err != nil {
				fatal(err)
			}
		}
		var wg sync.WaitGroup
		start := time.Now()
		for w := 0; w < *workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < per; i++ {
					if err := l.Chunk(ctx, uid, "t"+strconv.Itoa(w), i, 1); err != nil {
						fatal(err)
					}
				}
			}()
		}
		wg.Wait()
		took := time.Since(start)
		done := per * *workers
		fmt.Printf("%-8s ledger: %d ops in %v = %.0f ops/s (%.1f µs/op)\n", kind, done, took.Round(time.Millisecond),
			float64(done)/took.Seconds(), float64(took.Microseconds())/float64(done))
		db.Close()
	}
}

func openDB(ctx context.Context, path string) (*meta.SQLStore, int64) {
	db, err := meta.OpenSQLite(ctx, path, nil)
	if err != nil {
		fatal(err)
	}
	u, err := db.CreateUser(ctx, "bench", "x", false, 0)
	if err != nil {
		fatal(err)
	}
	return db, u.ID
}

func newLedger(ctx context.Context, kind string, rdb *redis.Client, cfg quota.Config) quota.Ledger {
	var l quota.Ledger
	if kind == "redis" {
		if err := rdb.FlushAll(ctx).Err(); err != nil {
			fatal(err)
		}
		l = quota.NewRedis(rdb, "", cfg)
	} else {
		l = quota.NewMemory(cfg)
	}
	if err := l.Reconcile(ctx, truth{}); err != nil {
		fatal(err)
	}
	return l
}

// connectRedis connects to url, or starts a private redis-server (the test
// suite's starter).
// cleanup stops a private redis-server before a fatal exit.
var cleanup = func() {}

func fatal(v ...any) { cleanup(); log.Fatal(v...) }

func fatalf(f string, v ...any) { cleanup(); log.Fatalf(f, v...) }
