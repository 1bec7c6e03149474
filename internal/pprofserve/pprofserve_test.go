package pprofserve_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"netdisk/internal/pprofserve"
)

var quiet = slog.New(slog.DiscardHandler)

// running reports whether a goroutine has a frame whose function name
// contains fn.
func running(fn string) bool {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Contains(string(buf[:n]), fn)
		}
		buf = make([]byte, 2*len(buf))
	}
}

// Close cuts a CPU profile in progress and returns only once its handler
// and the accept loop are gone.
func TestCloseWaitsForHandlers(t *testing.T) {
	s, err := pprofserve.Start(t.Context(), "127.0.0.1:0", quiet)
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.Get("http://" + s.Addr() + "/debug/pprof/")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.Contains(string(b), "goroutine") {
		t.Fatalf("GET /debug/pprof/: %d %.200s", res.StatusCode, b)
	}
	got := make(chan error, 1)
	go func() {
		res, err := http.Get("http://" + s.Addr() + "/debug/pprof/profile?seconds=60")
		if err == nil {
			_, err = io.ReadAll(res.Body)
			res.Body.Close()
		}
		got <- err
	}()
	for !running("net/http/pprof.Profile") {
		select {
		case err := <-got:
			t.Fatalf("profile ended before Close: %v", err)
		case <-time.After(5 * time.Millisecond): // polls a condition; the test's deadline bounds it
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if running("net/http/pprof.Profile") || running("pprofserve.Start") {
		t.Fatal("a profiler goroutine outlived Close")
	}
	<-got
}

// Ending the context stops the listener; Close still waits and may be
// called after.
func TestContextEndStops(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	s, err := pprofserve.Start(ctx, "127.0.0.1:0", quiet)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get("http://" + s.Addr() + "/debug/pprof/cmdline"); err == nil {
		t.Fatal("the profiler still answers after its context ended")
	}
}

func TestLoopbackOnly(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "192.0.2.1:0", "example.com:0", "nonsense"} {
		if s, err := pprofserve.Start(t.Context(), addr, quiet); err == nil {
			s.Close()
			t.Errorf("Start(%q) accepted", addr)
		}
	}
}
