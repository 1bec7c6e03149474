// Command async measures async downloads (seed 002):
//
//  1. tasks created per second, embedded (SQLite) and Redis stores side by
//     side: through the service in process (the store's cost), and over
//     HTTP (POST /api/v1/async/tasks, Basic auth included);
//  2. end-to-end delivery of one file (100 MiB) to 100 targets: from the
//     first request to the last Success, through a real daemon
//     (daemon.Open in this process) and agents (client.RunAgent, sharing one
//     cache folder as agents on one host do), with the collection window's
//     wait shown apart.
//
// Run: go run ./bench/async [-tasks 2000 -workers 8 -size 100MiB -targets 100 -agents 10 -redis URL]
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/dustin/go-humanize"

	"netdisk/apitype"
	"netdisk/async"
	"netdisk/bench/internal/benchflag"
	"netdisk/bench/internal/benchredis"
	"netdisk/bench/internal/fanout"
	"netdisk/bench/internal/inproc"
	"netdisk/client"
	"netdisk/daemon"
	"netdisk/drive"
)

func main() {
	tasks := flag.Int("tasks", 2000, "tasks created per creation figure")
	workers := flag.Int("workers", 8, "concurrent requesters")
	sizeFlag := benchflag.Bytes("size", 100<<20, "file size delivered")
	targets := flag.Int("targets", 100, "targets of the delivery")
	agents := flag.Int("agents", 10, "agent processes (goroutines here) the targets are spread over")
	redisFlag := benchredis.Flag()
	flag.Parse()
	log.SetFlags(0)
	ctx := context.Background()
	rdb, redisURL, stopRedis, err := benchredis.Connect(*redisFlag)
	if err != nil {
		log.Fatalf("redis: %v", err)
	}
	defer stopRedis()
	tmp, err := os.MkdirTemp("", "netdisk-bench-async-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(tmp)

	fmt.Printf("async download benchmark (%d tasks per creation figure, %d workers)\n\n", *tasks, *workers)
	fmt.Printf("%-46s %16s %16s\n", "tasks created per second", "embedded", "redis")
	var inProcess, overHTTP [2]float64
	for i, url := range []string{"", redisURL} {
		if url != "" {
			rdb.FlushDB(ctx)
		}
		d := startDaemon(ctx, url)
		inProcess[i] = createInProcess(ctx, d, *tasks, *workers)
		overHTTP[i] = createOverHTTP(ctx, d, *tasks, *workers)
		closeDaemon(d)
	}
	fmt.Printf("%-46s %12.0f t/s %12.0f t/s\n", "  service.Add (in process)", inProcess[0], inProcess[1])
	fmt.Printf("%-46s %12.0f t/s %12.0f t/s\n", fmt.Sprintf("  POST /api/v1/async/tasks (HTTP, %d workers)", httpWorkers(*workers)), overHTTP[0], overHTTP[1])

	fmt.Printf("\nend-to-end delivery: %s to %d targets over %d agents sharing one cache (embedded store, 1 s window)\n",
		humanize.IBytes(*sizeFlag), *targets, *agents)
	deliver(ctx, filepath.Join(tmp, "deliver"), int64(*sizeFlag), *targets, *agents)
}

// startDaemon serves a daemon in this process with a 1 s collection window
// and a fast tick, on the given Redis ("": the embedded store).
func startDaemon(ctx context.Context, redisURL string) *inproc.Daemon {
	d, err := inproc.Start(ctx, daemon.Options{Redis: redisURL, AsyncWindow: time.Second,
		AsyncTick: 50 * time.Millisecond, AsyncRecheck: 500 * time.Millisecond})
	if err != nil {
		log.Fatal(err)
	}
	return d
}

func closeDaemon(d *inproc.Daemon) {
	if err := d.Close(); err != nil {
		log.Print(err)
	}
}

// putFile stores a file of admin's directly through the drive.
func putFile(ctx context.Context, d *inproc.Daemon, p string, size int64) []byte {
	admin, err := d.Drive.User(ctx, "admin")
	if err != nil {
		log.Fatal(err)
	}
	data := make([]byte, size)
	rand.Read(data)
	w, err := d.Drive.Create(ctx, admin.ID, p, drive.WriteOptions{ExpectedSize: size})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := w.Write(data); err != nil {
		log.Fatal(err)
	}
	if _, err := w.Commit(); err != nil {
		log.Fatal(err)
	}
	return data
}

func parallel(workers, n int, f func(i int) error) float64 {
	wall, _ := fanout.Run(workers, n, func(i int) {
		if err := f(i); err != nil {
			log.Fatal(err)
		}
	})
	return float64(n) / wall.Seconds()
}

func createInProcess(ctx context.Context, d *inproc.Daemon, n, workers int) float64 {
	putFile(ctx, d, "/c.bin", 1024)
	admin, _ := d.Drive.User(ctx, "admin")
	return parallel(workers, n, func(i int) error {
		_, err := d.Async.Add(ctx, async.Request{User: admin.ID, Path: "/c.bin", Agent: fmt.Sprint("a", i%50), TargetDir: fmt.Sprint("t", i), WaitForAgent: true})
		return err
	})
}

// httpWorkers caps the HTTP requesters at 4: the sign-in throttle answers
// 429 to a sixth sign-in of one user from one address in flight at once.
func httpWorkers(w int) int { return min(w, 4) }

func createOverHTTP(ctx context.Context, d *inproc.Daemon, n, workers int) float64 {
	c := client.New(d.URL, "admin", inproc.AdminPass)
	if _, err := c.Info(ctx); err != nil {
		log.Fatal(err)
	}
	return parallel(httpWorkers(workers), n, func(i int) error {
		_, err := c.AsyncAdd(ctx, apitype.AsyncAdd{Path: "/c.bin", Agent: fmt.Sprint("h", i%50), TargetDir: fmt.Sprint("t", i), WaitForAgent: true})
		return err
	})
}

func deliver(ctx context.Context, dir string, size int64, targets, agents int) {
	d := startDaemon(ctx, "")
	defer closeDaemon(d)
	data := putFile(ctx, d, "/big.bin", size)
	c := client.New(d.URL, "admin", inproc.AdminPass)
	actx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	cache := filepath.Join(dir, "host-cache")
	for i := range agents {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := c.RunAgent(actx, client.AgentOptions{ID: fmt.Sprint("agent", i), Dir: filepath.Join(dir, fmt.Sprint("agent", i)),
				Cache: cache, Parallel: 4, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				log.Print(err)
			}
		}()
	}
	defer func() { stop(); wg.Wait() }()
	// Wait for the agents' streams, so the figure is delivery, not start-up.
	for deadline := time.Now().Add(30 * time.Second); ; {
		admin, _ := d.Drive.User(ctx, "admin")
		if len(d.Async.Agents(admin.ID)) == agents {
			break
		}
		if time.Now().After(deadline) {
			log.Fatal("agents did not connect")
		}
		time.Sleep(10 * time.Millisecond)
	}
	start := time.Now()
	ids := make([]string, targets)
	for i := range targets {
		t, err := c.AsyncAdd(ctx, apitype.AsyncAdd{Path: "/big.bin", Agent: fmt.Sprint("agent", i%agents), TargetDir: fmt.Sprint("t", i)})
		if err != nil {
			log.Fatal(err)
		}
		ids[i] = t.TaskID
	}
	added := time.Since(start)
	var running time.Duration
	for {
		done, ok := 0, true
		for _, id := range ids {
			t, err := c.AsyncStatus(ctx, id)
			if err != nil {
				log.Fatal(err)
			}
			switch async.Status(t.Status) {
			case async.Success:
				done++
			case async.Pending:
				ok = false
			case async.Running, async.Downloading:
				if running == 0 {
					running = time.Since(start)
				}
				ok = false
			default:
				log.Fatalf("task %s: %s %s", id, t.Status, t.Message)
			}
		}
		if ok && done == len(ids) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	total := time.Since(start)
	// Every copy is the file.
	for i := range targets {
		got, err := os.ReadFile(filepath.Join(dir, fmt.Sprint("agent", i%agents), fmt.Sprint("t", i), "big.bin"))
		if err != nil || !bytes.Equal(got, data) {
			log.Fatalf("target %d: copy differs (%v)", i, err)
		}
	}
	j, _ := d.Async.Status(ctx, mustAdmin(ctx, d), ids[0])
	fmt.Printf("  %-38s %10.3f s\n", fmt.Sprintf("%d requests sent", targets), added.Seconds())
	fmt.Printf("  %-38s %10.3f s   (the window ends, the tick starts the job)\n", "first task Running after", running.Seconds())
	fmt.Printf("  %-38s %10.3f s   (%s)\n", "all targets Success after", total.Seconds(), j.JobID)
	fmt.Printf("  %-38s %10.3f s   (%.0f MiB/s of target bytes written)\n", "delivery once running", (total - running).Seconds(),
		float64(size)*float64(targets)/(1<<20)/(total-running).Seconds())
}

func mustAdmin(ctx context.Context, d *inproc.Daemon) int64 {
	u, err := d.Drive.User(ctx, "admin")
	if err != nil {
		log.Fatal(err)
	}
	return u.ID
}
