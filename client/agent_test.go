package client

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"netdisk/apitype"
)

// agentProxy is a real reverse proxy in front of the daemon that answers
// the agent's reports 503 itself while down (the daemon's store away), and
// counts reports and content fetches.
type agentProxy struct {
	*httptest.Server
	down              atomic.Bool
	reports, contents atomic.Int32
}

func newAgentProxy(t *testing.T, target string) *agentProxy {
	u, _ := url.Parse(target)
	p := &agentProxy{}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.FlushInterval = -1
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/v1/async/agent/report":
			p.reports.Add(1)
			if p.down.Load() {
				http.Error(w, `{"error":"unavailable","code":"unavailable"}`, http.StatusServiceUnavailable)
				return
			}
		case "/api/v1/async/agent/content":
			p.contents.Add(1)
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { p.CloseClientConnections(); p.Close() })
	return p
}

// The agent keeps an outcome it could not report: stopped while the
// daemon answers 503, a new RunAgent on the same state folder sends it
// (without fetching the file again) and the task ends Success. Run in the
// process, under the race detector.
func TestAgentKeepsOutcomeAcrossRestart(t *testing.T) {
	d := startDaemon(t, "--async-window", "1s", "--async-tick", "100ms", "--async-recheck", "200ms")
	c := New(d.URL, "admin", d.AdminPass)
	src, data := writeRandom(t, t.TempDir(), "f.bin", 3, 200000)
	ctx := context.Background()
	if _, err := c.Push(ctx, src, "/f.bin", PushOptions{}); err != nil {
		t.Fatal(err)
	}
	p := newAgentProxy(t, d.URL)
	p.down.Store(true)
	via := New(p.URL, "admin", d.AdminPass)
	root := t.TempDir()
	o := AgentOptions{ID: "ag", Dir: filepath.Join(root, "dir"), Cache: filepath.Join(root, "cache"), State: filepath.Join(root, "state")}

	task, err := c.AsyncAdd(ctx, apitype.AsyncAdd{Path: "/f.bin", Agent: "ag", TargetDir: "in", WaitForAgent: true})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- via.RunAgent(runCtx, o) }()
	waitUntil(t, "two refused reports", func() bool { return p.reports.Load() >= 2 })
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(o.Dir, "in", "f.bin")); !bytes.Equal(got, data) {
		t.Fatalf("delivered %d bytes differ", len(got))
	}
	kept, _ := filepath.Glob(filepath.Join(o.State, "outcomes", "*.json"))
	if len(kept) != 1 {
		t.Fatalf("%d outcomes kept, want 1", len(kept))
	}

	p.down.Store(false)
	fetched := p.contents.Load()
	reported := make(chan string, 1)
	o.OnReported = func(id string) { reported <- id }
	runCtx, stop = context.WithCancel(ctx)
	defer stop()
	go func() { done <- via.RunAgent(runCtx, o) }()
	select {
	case id := <-reported:
		if id != task.TaskID {
			t.Fatalf("reported %s, want %s", id, task.TaskID)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the kept outcome was not reported")
	}
	waitUntil(t, "the task to succeed", func() bool {
		st, err := c.AsyncStatus(ctx, task.TaskID)
		return err == nil && st.Status == "Success"
	})
	if n := p.contents.Load(); n != fetched {
		t.Fatalf("the file was fetched again (%d fetches, was %d)", n, fetched)
	}
	waitUntil(t, "the outcome to be dropped", func() bool {
		kept, _ := filepath.Glob(filepath.Join(o.State, "outcomes", "*.json"))
		return len(kept) == 0
	})
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// waitUntil polls cond (bounded): the daemon and the agent work on their
// own time.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond) // polling a condition, bounded
	}
}
