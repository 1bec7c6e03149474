package testutil

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis is a real redis-server: loopback only, no persistence, so a Restart
// comes back empty (a lost Redis).
type Redis struct {
	t    testing.TB // nil when launched by LaunchRedis
	Addr string     // 127.0.0.1:PORT
	URL  string     // redis://127.0.0.1:PORT/0
	dir  string
	mu   sync.Mutex // guards proc: Restart replaces it
	proc *proc
}

// LaunchRedis starts redis-server on a free loopback port with its working
// directory in dir. The caller kills it (Kill). For programs such as the
// benchmarks; tests use StartRedis.
func LaunchRedis(dir string) (*Redis, error) {
	r := &Redis{dir: dir}
	err := onFreePort(func(addr string) error {
		r.Addr = addr
		return r.start()
	})
	if err != nil {
		return nil, fmt.Errorf("start redis-server: %w", err)
	}
	r.URL = "redis://" + r.Addr + "/0"
	return r, nil
}

// StartRedis starts redis-server on a free loopback port; it is killed at
// test cleanup. Missing redis-server skips the test locally, fails it in CI.
func StartRedis(t testing.TB) *Redis {
	t.Helper()
	RequireTool(t, "redis-server")
	r, err := LaunchRedis(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r.t = t
	t.Cleanup(r.Kill)
	return r
}

func (r *Redis) start() error {
	_, port, _ := net.SplitHostPort(r.Addr)
	cmd := exec.Command("redis-server", "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", r.dir, "--protected-mode", "no")
	p, err := startProc("redis-server", cmd, nil)
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.proc = p
	r.mu.Unlock()
	c := redis.NewClient(&redis.Options{Addr: r.Addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	defer c.Close()
	return p.waitReady(context.Background(), 10*time.Second, 10*time.Millisecond, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		return c.Ping(ctx).Err()
	})
}

// Client returns a new client with short timeouts, closed at test cleanup.
func (r *Redis) Client() *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: r.Addr, DialTimeout: 300 * time.Millisecond,
		ReadTimeout: time.Second, WriteTimeout: time.Second, MaxRetries: 1})
	r.t.Cleanup(func() { c.Close() })
	return c
}

// Kill kills redis-server with SIGKILL and waits for it.
func (r *Redis) Kill() {
	r.mu.Lock()
	p := r.proc
	r.mu.Unlock()
	if p != nil {
		p.kill(syscall.SIGKILL)
	}
}

// Restart kills the server and starts an empty one on the same port.
func (r *Redis) Restart() {
	r.t.Helper()
	r.Kill()
	r.Start()
}

// Stop shuts the server down keeping its data set (SHUTDOWN SAVE writes it
// to the server's directory), and waits for it to exit; Start brings it
// back with that data. An outage that loses nothing, unlike Restart.
func (r *Redis) Stop() {
	r.t.Helper()
	c := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer c.Close()
	c.ShutdownSave(context.Background()) // the server closes the connection: no reply to check
	r.mu.Lock()
	p := r.proc
	r.mu.Unlock()
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		r.t.Fatalf("redis-server did not shut down:\n%s", p.log.String())
	}
}

// Start starts the server again on its port, loading what Stop saved.
func (r *Redis) Start() {
	r.t.Helper()
	var err error
	for attempt := 0; attempt < 50; attempt++ {
		if err = r.start(); err == nil {
			return
		}
		time.Sleep(20 * time.Millisecond) // the port may linger a moment
	}
	r.t.Fatalf("start redis-server again: %v", err)
}

// FlushAll empties the server (every database).
func (r *Redis) FlushAll() {
	r.t.Helper()
	c := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer c.Close()
	if err := c.FlushAll(context.Background()).Err(); err != nil {
		r.t.Fatalf("FLUSHALL: %v", err)
	}
}
