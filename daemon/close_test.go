package daemon

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"netdisk/dedup"
	"netdisk/testutil"
)

// daemonPackages are the packages whose goroutines a closed daemon must
// have ended.
var daemonPackages = []string{"netdisk/daemon.", "netdisk/server.", "netdisk/drive.", "netdisk/dedup.", "netdisk/lock.",
	"netdisk/async.", "netdisk/upload.", "netdisk/quota.", "netdisk/meta.", "netdisk/dav.", "netdisk/davlock."}

// A daemon closed while reads hang on a stalled S3 (its read cache's
// fetches and read-ahead under way, their pull locks in Redis) leaves none
// of its goroutines behind once Close returns.
func TestCloseUnderLoadLeavesNoGoroutines(t *testing.T) {
	s3 := testutil.StartS3(t)
	url, _ := s3.NewBucket(t)
	r := testutil.StartRedis(t)
	dataDir := t.TempDir()
	opts := func() Options {
		return Options{DataDir: dataDir, AdminPass: "admin-pass", Out: io.Discard, ChunkSize: 64 << 10,
			Redis: r.URL, Blobs: url, CacheDir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	}
	body := bytes.Repeat([]byte("0123456789abcdef"), 16<<10) // four chunks
	// One run stores the file; the next starts with a cold cache.
	serve(t, opts(), func(_ *Daemon, base string) {
		req, _ := http.NewRequest("PUT", base+"/dav/f", bytes.NewReader(body))
		req.SetBasicAuth("admin", "admin-pass")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("PUT: %d", resp.StatusCode)
		}
	})
	t.Cleanup(s3.Resume)
	serve(t, opts(), func(d *Daemon, base string) {
		s3.Pause()
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req, _ := http.NewRequestWithContext(ctx, "GET", base+"/dav/f", nil)
				req.SetBasicAuth("admin", "admin-pass")
				if resp, err := http.DefaultClient.Do(req); err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}()
		}
		c := d.cache.(*dedup.Cache)
		deadline := time.Now().Add(20 * time.Second)
		for c.Fetches() == 0 { // the reads reached the stalled S3
			if time.Now().After(deadline) {
				t.Fatal("no read reached S3")
			}
			time.Sleep(5 * time.Millisecond)
		}
		cancel() // the clients give up; the fetches they started hang on
		wg.Wait()
	})
	testutil.NoGoroutines(t, daemonPackages...)
}

// serve opens a daemon with o, serves it on a loopback port while fn runs
// with it and its base URL, then shuts it down and closes it.
func serve(t *testing.T, o Options, fn func(d *Daemon, base string)) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d, err := Open(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- d.ServeListener(ctx, ln) }()
	fn(d, "http://"+ln.Addr().String())
	cancel()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
}
