package daemon

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestCloseWaitsForBackgroundLoops: a daemon shut down while its loops run
// (GC every millisecond, the first checksum pass just started) and closed at
// once, while Serve is still shutting down, closes its stores only after
// every background loop returned.
func TestCloseWaitsForBackgroundLoops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d, err := Open(ctx, Options{DataDir: t.TempDir(), Listen: "127.0.0.1:0", ChunkSize: 64 << 10,
		GCInterval: time.Millisecond, AdminPass: "admin-pass", Out: io.Discard,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	const loops = 5 // upload janitor, checksums, quota, lock leases, gc
	var (
		mu      sync.Mutex
		events  []string
		started = make(chan struct{})
		closing = make(chan struct{})
	)
	d.onEvent = func(e string) {
		if strings.HasPrefix(e, "exit ") {
			// A loop that ends late (after Close began) must still end
			// before the stores close.
			<-closing
		}
		mu.Lock()
		defer mu.Unlock()
		events = append(events, e)
		n := 0
		for _, e := range events {
			if strings.HasPrefix(e, "start ") {
				n++
			}
		}
		if n == loops && strings.HasPrefix(e, "start ") {
			close(started)
		}
	}
	served := make(chan error, 1)
	go func() { served <- d.Serve(ctx) }()
	<-started
	cancel()
	close(closing)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	got := slices.Clone(events)
	mu.Unlock()
	at := slices.Index(got, "close")
	if at < 0 {
		t.Fatalf("no close event: %v", got)
	}
	for _, name := range []string{"upload-janitor", "checksums", "quota", "lock-leases", "gc"} {
		if i := slices.Index(got, "exit "+name); i < 0 || i > at {
			t.Errorf("loop %s did not end before the stores closed: %v", name, got)
		}
	}
	if err := <-served; err != nil {
		t.Fatal(err)
	}
}

// TestServeListener: an in-process caller's own listener is served (the
// address is known without a ready file, and the admin signs in), and
// cancelling ctx ends ServeListener cleanly with the listener closed.
func TestServeListener(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d, err := Open(ctx, Options{DataDir: t.TempDir(), AdminPass: "admin-pass", Out: io.Discard,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- d.ServeListener(ctx, ln) }()
	req, _ := http.NewRequest("PROPFIND", "http://"+ln.Addr().String()+"/dav/", nil)
	req.SetBasicAuth("admin", "admin-pass")
	req.Header.Set("Depth", "0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMultiStatus {
		t.Fatalf("PROPFIND /dav/ as admin: %d", resp.StatusCode)
	}
	cancel()
	if err := <-served; err != nil {
		t.Fatalf("ServeListener after cancel: %v", err)
	}
	if _, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		t.Fatal("the listener still accepts after ServeListener returned")
	}
}
