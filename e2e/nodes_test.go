package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"netdisk/apitype"
	"netdisk/testutil"
)

// cluster is two nodes on one PostgreSQL, one S3 bucket and one Redis, each
// with its own read cache (its own data directory).
type cluster struct {
	pg   *testutil.Postgres
	s3   *testutil.S3
	a, b *testutil.Daemon
}

func startCluster(t *testing.T) *cluster {
	t.Helper()
	c := &cluster{pg: testutil.StartPostgres(t), s3: testutil.StartS3(t)}
	r := testutil.StartRedis(t)
	blobs, _ := c.s3.NewBucket(t)
	shared := []string{"--meta", c.pg.NewDatabase(t), "--blobs", blobs, "--redis", r.URL, "--chunk-size", "64KiB"}
	c.a = testutil.StartDaemon(t, shared...)
	c.b = testutil.StartDaemon(t, shared...)
	return c
}

// answer is one response, its body read to the end (or to where it broke).
type answer struct {
	code    int
	header  http.Header
	body    []byte
	readErr error
}

func ask(t *testing.T, d *testutil.Daemon, method, path string, body []byte, hdr map[string]string) answer {
	t.Helper()
	resp, err := d.Do(context.Background(), method, path, "admin", d.AdminPass, body, hdr)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, rerr := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, resp.Header, b, rerr}
}

// requestCount reads netdisk_http_requests_total for a surface, method and
// status from the node's /metrics.
func requestCount(t *testing.T, d *testutil.Daemon, surface, method string, code int) int {
	t.Helper()
	a := ask(t, d, "GET", "/metrics", nil, nil)
	if a.code != 200 {
		t.Fatalf("/metrics: %d", a.code)
	}
	re := regexp.MustCompile(fmt.Sprintf(`netdisk_http_requests_total\{code="%d",method="%s",surface="%s"\} (\d+)`, code, method, surface))
	m := re.FindSubmatch(a.body)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}

// With the chunk store away, a read answers before its status: 503 with
// Retry-After when the body's first chunk cannot be had (whole file and
// Range), never a 200 whose body stops; content kept inline in the
// metadata store is served without asking S3; a write is 503, not 500. A
// body that breaks after its status (its first chunk was in the node's
// cache) is cut off, not ended cleanly, and counted as a failure, not a 200.
// Once S3 is back, everything reads again.
func TestS3OutageAnswersBeforeTheStatus(t *testing.T) {
	c := startCluster(t)
	big := testutil.RandBytes(5 * 64 << 10) // five chunks
	small := []byte("a small file: kept inline in the metadata store")
	for p, body := range map[string][]byte{"/dav/big.bin": big, "/dav/small.txt": small} {
		if a := ask(t, c.a, "PUT", p, body, nil); a.code != http.StatusCreated {
			t.Fatalf("PUT %s through A: %d %s", p, a.code, a.body)
		}
	}
	// Node B caches the first chunk only (a one-chunk range reads no
	// further ahead).
	if a := ask(t, c.b, "GET", "/dav/big.bin", nil, map[string]string{"Range": "bytes=0-99"}); a.code != http.StatusPartialContent || !bytes.Equal(a.body, big[:100]) {
		t.Fatalf("range GET before the outage: %d, %d bytes", a.code, len(a.body))
	}

	c.s3.Kill()
	unavailable := func(what string, a answer) {
		t.Helper()
		if a.code != http.StatusServiceUnavailable || a.header.Get("Retry-After") == "" {
			t.Errorf("%s during the S3 outage: %d (Retry-After %q), %d bytes %q; want 503 with Retry-After",
				what, a.code, a.header.Get("Retry-After"), len(a.body), clip(a.body))
		}
		if bytes.Contains(a.body, []byte(c.s3.Endpoint)) || bytes.Contains(a.body, []byte("dial")) {
			t.Errorf("%s: body %q names the store", what, a.body)
		}
	}
	unavailable("GET from the second chunk on", ask(t, c.b, "GET", "/dav/big.bin", nil, map[string]string{"Range": "bytes=70000-"}))
	unavailable("range GET of the last chunk", ask(t, c.b, "GET", "/dav/big.bin", nil, map[string]string{"Range": "bytes=-100"}))
	unavailable("PUT", ask(t, c.b, "PUT", "/dav/new.bin", testutil.RandBytes(200<<10), nil))
	if a := ask(t, c.b, "GET", "/dav/small.txt", nil, nil); a.code != 200 || !bytes.Equal(a.body, small) {
		t.Errorf("inline file during the S3 outage: %d %q; want 200 and its bytes", a.code, clip(a.body))
	}

	// The first chunk is in B's cache: the status goes out, the second
	// chunk fails. The client must see the body cut, the node count it.
	ok200 := requestCount(t, c.b, "dav", "GET", 200)
	failed503 := requestCount(t, c.b, "dav", "GET", 503)
	a := ask(t, c.b, "GET", "/dav/big.bin", nil, nil)
	if a.code == 200 && (a.readErr == nil || !errors.Is(a.readErr, io.ErrUnexpectedEOF)) {
		t.Errorf("GET whose second chunk fails: 200 with %d of %d bytes, read error %v; want the body cut off (unexpected EOF)",
			len(a.body), len(big), a.readErr)
	}
	if a.code == 200 && !bytes.Equal(a.body, big[:len(a.body)]) {
		t.Errorf("the cut body is not a prefix of the file")
	}
	if got := requestCount(t, c.b, "dav", "GET", 200); got != ok200 {
		t.Errorf("the cut GET was counted as a 200 (%d -> %d)", ok200, got)
	}
	if got := requestCount(t, c.b, "dav", "GET", 503); got != failed503+1 {
		t.Errorf("503 GETs %d -> %d; want the cut GET counted as one", failed503, got)
	}
	if !strings.Contains(c.b.Logs(), "cut after its status") {
		t.Errorf("node B logged nothing about the cut GET")
	}

	c.s3.Restart(t)
	if a := ask(t, c.b, "GET", "/dav/big.bin", nil, nil); a.code != 200 || !bytes.Equal(a.body, big) {
		t.Fatalf("GET after S3 is back: %d, %d bytes", a.code, len(a.body))
	}
}

// A PostgreSQL restart in the middle of a sequence of requests on every
// edge (WebDAV, the JSON API, the web page) gives each request its answer or
// a 503 with Retry-After, never a 500, and no body carries the database's
// text; once it is back, every node answers.
func TestPostgresRestartDuringRequests(t *testing.T) {
	c := startCluster(t)
	content := testutil.RandBytes(100 << 10)
	if a := ask(t, c.a, "PUT", "/dav/f.bin", content, nil); a.code != http.StatusCreated {
		t.Fatalf("PUT: %d %s", a.code, a.body)
	}
	requests := []struct{ method, path string }{
		{"GET", "/dav/f.bin"},
		{"PROPFIND", "/dav/"},
		{"GET", "/api/v1/quota"},
		{"GET", "/api/v1/fs/list?path=/"},
		{"GET", "/api/v1/admin/users"},
		{"PUT", "/dav/g.bin"},
	}
	pgAddr := c.pg.Addr // (Up writes it again)
	var mu sync.Mutex
	var bad []string
	seen503 := 0
	check := func(d *testutil.Daemon, method, path string) {
		var body []byte
		if method == "PUT" {
			body = content[:1000]
		}
		hdr := map[string]string{"Depth": "1"}
		resp, err := d.Do(context.Background(), method, path, "admin", d.AdminPass, body, hdr)
		if err != nil {
			return // the node itself is fine; a refused connection is not ours to judge
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		mu.Lock()
		defer mu.Unlock()
		switch {
		case resp.StatusCode >= 500 && resp.StatusCode != http.StatusServiceUnavailable:
			bad = append(bad, fmt.Sprintf("%s %s: %d %q", method, path, resp.StatusCode, clip(b)))
		case resp.StatusCode == http.StatusServiceUnavailable:
			seen503++
			if resp.Header.Get("Retry-After") == "" {
				bad = append(bad, fmt.Sprintf("%s %s: 503 without Retry-After", method, path))
			}
		}
		for _, s := range []string{"SQLSTATE", "FATAL", "terminating", "57P01", pgAddr} {
			if bytes.Contains(b, []byte(s)) {
				bad = append(bad, fmt.Sprintf("%s %s: %d body %q carries %q", method, path, resp.StatusCode, clip(b), s))
			}
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, d := range []*testutil.Daemon{c.a, c.b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				for _, r := range requests {
					select {
					case <-stop:
						return
					default:
					}
					check(d, r.method, r.path)
				}
			}
		}()
	}
	c.pg.Down()
	// While it is down, each edge answers 503 (deterministically: no
	// connection can be had).
	for _, r := range requests {
		check(c.b, r.method, r.path)
	}
	c.pg.Up(t)
	close(stop)
	wg.Wait()
	if len(bad) > 0 {
		t.Fatalf("%d bad answers during the restart:\n%s", len(bad), strings.Join(bad, "\n"))
	}
	if seen503 == 0 {
		t.Fatalf("no request saw the database down")
	}
	waitFor(t, 30*time.Second, "both nodes answering after the restart", func() bool {
		return ask(t, c.a, "GET", "/dav/f.bin", nil, nil).code == 200 && ask(t, c.b, "GET", "/dav/f.bin", nil, nil).code == 200
	})
}

func clip(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "…"
	}
	return string(b)
}

// A node that starts (and reconciles the shared quota ledger) while another
// node streams a PUT keeps that PUT's hold: with 150 KiB of a 200 KiB quota
// on its way to node A, a 100 KiB PUT through the restarted node B is
// refused at once (507, before its bytes), and A's PUT commits.
func TestNodeStartKeepsOtherNodesHolds(t *testing.T) {
	c := startCluster(t)
	if a := ask(t, c.a, "POST", "/api/v1/admin/users", []byte(`{"name":"quinn","password":"quinn-pass-123","quota":204800}`), nil); a.code != http.StatusCreated {
		t.Fatalf("add user: %d %s", a.code, a.body)
	}
	first := testutil.RandBytes(150 << 10)
	pr, pw := io.Pipe()
	req, err := c.a.Request(context.Background(), "PUT", "/dav/first.bin", "quinn", "quinn-pass-123", pr, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = int64(len(first))
	done := make(chan answer, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- answer{readErr: err}
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		done <- answer{code: resp.StatusCode, body: b}
	}()
	// Part of the body is through: A holds 150 KiB for it.
	if _, err := pw.Write(first[:10<<10]); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the first PUT's hold", func() bool {
		resp, err := c.b.Do(context.Background(), "GET", "/api/v1/quota", "quinn", "quinn-pass-123", nil, nil)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		// The hold is the body's declared length and, for a new file, its
		// entry's charge.
		var q apitype.Quota
		return json.NewDecoder(resp.Body).Decode(&q) == nil && q.Uploading >= int64(len(first))
	})
	c.b.Restart()
	resp, err := c.b.Do(context.Background(), "PUT", "/dav/second.bin", "quinn", "quinn-pass-123", testutil.RandBytes(100<<10), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusInsufficientStorage {
		t.Errorf("100 KiB PUT through the restarted node while 150 KiB of 200 KiB stream to the other: %d %s; want 507", resp.StatusCode, b)
	}
	if _, err := pw.Write(first[10<<10:]); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	if a := <-done; a.code != http.StatusCreated {
		t.Fatalf("the streaming PUT: %d %s %v", a.code, a.body, a.readErr)
	}
	if strings.Contains(c.a.Logs(), "unknown to the ledger") {
		t.Errorf("node A lost its hold:\n%s", c.a.Logs())
	}
}
