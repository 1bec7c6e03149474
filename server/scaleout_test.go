package server_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"netdisk/chunker"
	"netdisk/server"
	"netdisk/testutil"
)

// One PostgreSQL cluster and one S3 server serve the package's tests.
func TestMain(m *testing.M) { testutil.Main(m) }

// Two nodes on one PostgreSQL, one bucket and one Redis are one drive: a file
// written through one node reads back byte-identical through the other, and
// the same content written by two users through different nodes is stored
// once in the bucket.
func TestTwoNodesShareOneDrive(t *testing.T) {
	pg := testutil.SharedPostgres(t)
	s3 := testutil.SharedS3(t)
	r := testutil.StartRedis(t)
	blobs, bucket := s3.NewBucket(t)
	shared := []string{"--meta", pg.NewDatabase(t), "--blobs", blobs, "--redis", r.URL, "--chunk-size", "64KiB"}
	a := testutil.StartDaemon(t, shared...)
	b := testutil.StartDaemon(t, shared...)
	ctx := context.Background()
	do := func(d *testutil.Daemon, method, path, user, pass string, body []byte) (int, []byte) {
		t.Helper()
		resp, err := d.Do(ctx, method, path, user, pass, body, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out bytes.Buffer
		out.ReadFrom(resp.Body)
		return resp.StatusCode, out.Bytes()
	}
	// A user added through node B signs in through node A.
	if code, body := do(b, "POST", "/api/v1/admin/users", "admin", b.AdminPass, []byte(`{"name":"carol","password":"carol-pass-123"}`)); code != http.StatusCreated {
		t.Fatalf("add user through B: %d %s", code, body)
	}
	content := make([]byte, 300<<10) // five 64 KiB chunks (the last one short)
	rand.Read(content)
	if code, body := do(a, "PUT", "/dav/one.bin", "admin", a.AdminPass, content); code != http.StatusCreated {
		t.Fatalf("PUT through A: %d %s", code, body)
	}
	if code, got := do(b, "GET", "/dav/one.bin", "admin", b.AdminPass, nil); code != 200 || !bytes.Equal(got, content) {
		t.Fatalf("GET through B: %d, %d bytes; want the %d bytes written through A", code, len(got), len(content))
	}
	if code, body := do(b, "PUT", "/dav/same.bin", "carol", "carol-pass-123", content); code != http.StatusCreated {
		t.Fatalf("PUT through B: %d %s", code, body)
	}
	if code, got := do(a, "GET", "/dav/same.bin", "carol", "carol-pass-123", nil); code != 200 || !bytes.Equal(got, content) {
		t.Fatalf("carol's GET through A: %d, %d bytes", code, len(got))
	}
	c, err := s3.Client()
	if err != nil {
		t.Fatal(err)
	}
	countObjects := func() (n int) {
		t.Helper()
		for o := range c.ListObjects(ctx, bucket, minio.ListObjectsOptions{Recursive: true}) {
			if o.Err != nil {
				t.Fatal(o.Err)
			}
			n++
		}
		return n
	}
	if objects := countObjects(); objects != 5 {
		t.Fatalf("bucket holds %d objects; want 5 (one per distinct chunk, both users' copies sharing them)", objects)
	}
	// A small file is kept inline in PostgreSQL, committed with its entry:
	// the other node reads it from there, and the bucket gains nothing.
	small := []byte("a small file, one chunk kept inline")
	if code, body := do(a, "PUT", "/dav/small.txt", "admin", a.AdminPass, small); code != http.StatusCreated {
		t.Fatalf("small PUT through A: %d %s", code, body)
	}
	if code, got := do(b, "GET", "/dav/small.txt", "admin", b.AdminPass, nil); code != 200 || !bytes.Equal(got, small) {
		t.Fatalf("small GET through B: %d %q", code, got)
	}
	if objects := countObjects(); objects != 5 {
		t.Fatalf("bucket holds %d objects after a small PUT; want still 5 (its chunk inline in the metadata)", objects)
	}
	// A WebDAV lock taken through node A binds a DELETE through node B.
	lockBody := []byte(`<?xml version="1.0"?><D:lockinfo xmlns:D="DAV:"><D:lockscope><D:exclusive/></D:lockscope><D:locktype><D:write/></D:locktype></D:lockinfo>`)
	resp, err := a.Do(ctx, "LOCK", "/dav/one.bin", "admin", a.AdminPass, lockBody, map[string]string{"Timeout": "Second-600"})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	token := resp.Header.Get("Lock-Token")
	if resp.StatusCode != 200 || token == "" {
		t.Fatalf("LOCK through A: %d, token %q", resp.StatusCode, token)
	}
	if code, _ := do(b, "DELETE", "/dav/one.bin", "admin", b.AdminPass, nil); code != http.StatusLocked {
		t.Fatalf("DELETE through B of a file locked through A: %d; want 423", code)
	}
	resp, err = b.Do(ctx, "DELETE", "/dav/one.bin", "admin", b.AdminPass, nil, map[string]string{"If": "(" + token + ")"})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE through B with A's lock token: %d; want 204", resp.StatusCode)
	}
	// Node A's local disk holds no chunk directory: the bucket is the store.
	if _, err := os.Stat(a.DataDir + "/chunks"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("node A made a local chunk directory: %v", err)
	}
}

// Run-once jobs (GC, the history's two loops, and the quota ledger's
// flushes into the shared database) run on one node at a time and move to another when their node
// is killed.
func TestRunOnceJobsMoveWhenNodeDies(t *testing.T) {
	pg := testutil.SharedPostgres(t)
	r := testutil.StartRedis(t)
	shared := []string{"--meta", pg.NewDatabase(t), "--redis", r.URL, "--lease-ttl", "1s", "--gc-interval", "1h"}
	a := testutil.StartDaemon(t, shared...)
	b := testutil.StartDaemon(t, shared...)
	took := func(job string) string { return `msg="run-once job: lease taken, running here" job=` + job }
	holder := func(job string) (*testutil.Daemon, *testutil.Daemon) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for time.Now().Before(deadline) {
			ina, inb := strings.Count(a.Logs(), took(job)), strings.Count(b.Logs(), took(job))
			switch {
			case ina > 0 && inb > 0:
				t.Fatalf("both nodes ran %s", job)
			case ina > 0:
				return a, b
			case inb > 0:
				return b, a
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Fatalf("no node took the %s lease within 15s", job)
		return nil, nil
	}
	// Kill the flusher; the survivor then runs both jobs (gc moving too if
	// it ran there).
	holder("gc")
	holder("history")
	holder("versions")
	h, other := holder("quota-flush")
	h.Kill()
	for _, job := range []string{"quota-flush", "gc"} {
		deadline := time.Now().Add(15 * time.Second)
		for !strings.Contains(other.Logs(), took(job)) {
			if time.Now().After(deadline) {
				t.Fatalf("%s did not move to the surviving node within 15s of the holder's death (lease 1s)", job)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// cluster is nodes netdisk nodes on one PostgreSQL database, one bucket and
// one Redis, behind nginx round-robin.
type cluster struct {
	nodes  []*testutil.Daemon
	lb     *testutil.Nginx
	bucket string
	s3     *testutil.S3
	redis  *testutil.Redis
}

func startCluster(t *testing.T, nodes int, extra ...string) *cluster {
	t.Helper()
	pg := testutil.SharedPostgres(t)
	s3 := testutil.SharedS3(t)
	r := testutil.StartRedis(t)
	blobs, bucket := s3.NewBucket(t)
	args := append([]string{"--meta", pg.NewDatabase(t), "--blobs", blobs, "--redis", r.URL, "--chunk-size", "64KiB", "--log-level", "warn"}, extra...)
	c := &cluster{bucket: bucket, s3: s3, redis: r}
	var addrs []string
	for range nodes {
		d := testutil.StartDaemon(t, args...)
		c.nodes = append(c.nodes, d)
		addrs = append(addrs, d.Addr)
	}
	c.lb = testutil.StartNginx(t, addrs...)
	return c
}

// litmus passes in full (104 of 104) through nginx round-robin over two
// nodes: every request may land on either node, so locks, properties and
// the tree must all be shared.
func TestLitmusThroughBalancer(t *testing.T) {
	c := startCluster(t, 2)
	testutil.RunLitmus(t, c.lb.URL+"/dav/", "admin", c.nodes[0].AdminPass, testutil.LitmusSuites)
}

// jsonDo sends a JSON (or raw) request to one node and decodes the answer.
func jsonDo(t *testing.T, d *testutil.Daemon, method, path, user, pass string, body []byte, out any) int {
	t.Helper()
	resp, err := d.Do(context.Background(), method, path, user, pass, body, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v in %s", method, path, err, b)
		}
	}
	if resp.StatusCode >= 300 {
		t.Logf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
	return resp.StatusCode
}

// An upload session spread over three nodes — opened on one, chunks sent to
// another that is killed midway, resumed and finished through the third,
// merged on the first — gives the file byte-identical on every node, and
// the user's quota counts it exactly once.
func TestUploadSessionAcrossNodes(t *testing.T) {
	c := startCluster(t, 3)
	a, b, k := c.nodes[0], c.nodes[1], c.nodes[2]
	pass := a.AdminPass
	const chunk = 64 << 10
	content := make([]byte, 10*chunk+123)
	rand.Read(content)
	var md5s []string
	var parts [][]byte
	for off := 0; off < len(content); off += chunk {
		p := content[off:min(off+chunk, len(content))]
		parts = append(parts, p)
		md5s = append(md5s, chunker.ChunkMD5(p))
	}
	fileHash := chunker.FileHash(md5s)
	initBody, _ := json.Marshal(map[string]any{"path": "/big.bin", "size": len(content), "fileHash": fileHash})
	var sess struct {
		UploadID string  `json:"uploadId"`
		Uploaded []int64 `json:"uploaded"`
	}
	if code := jsonDo(t, a, "POST", "/api/v1/file/init", "admin", pass, initBody, &sess); code != 200 {
		t.Fatalf("init on node A: %d", code)
	}
	put := func(d *testutil.Daemon, i int) int {
		return jsonDo(t, d, "PUT", fmt.Sprintf("/api/v1/file/uploadChunk?uploadId=%s&index=%d&hash=%s", sess.UploadID, i, md5s[i]), "admin", pass, parts[i], nil)
	}
	for i := 0; i < 5; i++ {
		if code := put(b, i); code != 200 {
			t.Fatalf("chunk %d on node B: %d", i, code)
		}
	}
	b.Kill() // mid-push: acknowledged chunks must survive
	var resumed struct {
		UploadID string  `json:"uploadId"`
		Uploaded []int64 `json:"uploaded"`
	}
	if code := jsonDo(t, k, "POST", "/api/v1/file/init", "admin", pass, initBody, &resumed); code != 200 {
		t.Fatalf("resume on node C: %d", code)
	}
	if resumed.UploadID != sess.UploadID || len(resumed.Uploaded) != 5 {
		t.Fatalf("resume on node C: session %s with %v; want %s with chunks 0-4", resumed.UploadID, resumed.Uploaded, sess.UploadID)
	}
	for i := 5; i < len(parts); i++ {
		if code := put(k, i); code != 200 {
			t.Fatalf("chunk %d on node C: %d", i, code)
		}
	}
	mergeBody, _ := json.Marshal(map[string]any{"uploadId": sess.UploadID, "fileHash": fileHash})
	if code := jsonDo(t, a, "POST", "/api/v1/file/merge", "admin", pass, mergeBody, nil); code != 200 {
		t.Fatalf("merge on node A: %d", code)
	}
	for _, d := range []*testutil.Daemon{a, k} {
		resp, err := d.Do(context.Background(), "GET", "/dav/big.bin", "admin", pass, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !bytes.Equal(got, content) {
			t.Fatalf("GET through %s: %d bytes, not the uploaded file", d.Addr, len(got))
		}
		var q struct{ Finished, Unfinished, Uploading int64 }
		if code := jsonDo(t, d, "GET", "/api/v1/quota", "admin", pass, nil, &q); code != 200 {
			t.Fatalf("quota: %d", code)
		}
		if q.Finished != int64(len(content)) || q.Unfinished != 0 || q.Uploading != 0 {
			t.Fatalf("quota through %s: %+v; want finished %d and nothing in flight", d.Addr, q, len(content))
		}
	}
}

// GC running over and over on one node while another node stores, deletes
// and stores again the same content never loses a chunk a file references:
// the chunk a write on node B has found in the bucket (or just put there)
// and not yet committed is pinned for node A's GC too.
func TestGCOnOneNodeRacingUploadsOnAnother(t *testing.T) {
	c := startCluster(t, 2)
	a, b := c.nodes[0], c.nodes[1]
	pass := a.AdminPass
	ctx, cancel := context.WithCancel(context.Background())
	gcDone := make(chan int)
	go func() {
		runs := 0
		for ctx.Err() == nil {
			resp, err := a.Do(ctx, "POST", "/api/v1/admin/gc", "admin", pass, nil, nil)
			if err == nil {
				resp.Body.Close()
				runs++
			}
		}
		gcDone <- runs
	}()
	content := make([]byte, 3*64<<10)
	rand.Read(content)
	const rounds = 25
	for i := range rounds {
		// The old copy goes (its chunks become garbage) and the same bytes
		// come back under another name: the write finds them in the bucket.
		if i > 0 {
			if code, _ := fetch(t, b, "DELETE", fmt.Sprintf("/dav/keep-%d.bin", i-1), "admin", pass, nil); code != http.StatusNoContent {
				t.Fatalf("DELETE keep-%d: %d", i-1, code)
			}
		}
		if code, _ := fetch(t, b, "PUT", fmt.Sprintf("/dav/keep-%d.bin", i), "admin", pass, content); code != http.StatusCreated {
			t.Fatalf("PUT keep-%d: %d", i, code)
		}
	}
	cancel()
	if runs := <-gcDone; runs == 0 {
		t.Fatal("GC never ran during the uploads")
	}
	// The surviving file's chunks are all in the bucket (asked of the
	// bucket, not through a node's cache).
	s3c, err := c.s3.Client()
	if err != nil {
		t.Fatal(err)
	}
	for off := 0; off < len(content); off += 64 << 10 {
		k := sha256.Sum256(content[off : off+64<<10])
		if _, err := s3c.StatObject(context.Background(), c.bucket, hex.EncodeToString(k[:]), minio.StatObjectOptions{}); err != nil {
			t.Fatalf("chunk at %d of the surviving file is gone from the bucket: %v", off, err)
		}
	}
}

// Failed logins spread over two nodes count together: the pair limit is
// reached after PairLimit failures whichever nodes saw them.
func TestLoginThrottleAcrossNodes(t *testing.T) {
	pg := testutil.SharedPostgres(t)
	r := testutil.StartRedis(t)
	shared := []string{"--meta", pg.NewDatabase(t), "--redis", r.URL}
	nodes := []*testutil.Daemon{testutil.StartDaemon(t, shared...), testutil.StartDaemon(t, shared...)}
	// Node 0 remembers the right password (drive.AuthenticateCached): the
	// failures below, however few of them node 0 saw, still refuse it.
	if code, _ := fetch(t, nodes[0], "PROPFIND", "/dav/", "admin", nodes[0].AdminPass, nil); code != http.StatusMultiStatus {
		t.Fatalf("login with the right password: %d", code)
	}
	for i := range server.PairLimit {
		// Alternating, the last on node 1: node 0 saw fewer than PairLimit.
		if code, _ := fetch(t, nodes[(server.PairLimit-i)%2], "PROPFIND", "/dav/", "admin", "wrong-password", nil); code != http.StatusUnauthorized {
			t.Fatalf("failed login %d: %d, want 401", i+1, code)
		}
	}
	if code, _ := fetch(t, nodes[0], "PROPFIND", "/dav/", "admin", nodes[0].AdminPass, nil); code != http.StatusTooManyRequests {
		t.Fatalf("the remembered password during the lockout: %d, want 429", code)
	}
	for _, d := range nodes {
		if code, _ := fetch(t, d, "PROPFIND", "/dav/", "admin", "wrong-password", nil); code != http.StatusTooManyRequests {
			t.Fatalf("login on %s after %d failures spread over two nodes: %d, want 429", d.Addr, server.PairLimit, code)
		}
	}
}

// Uploads racing through the balancer for one user with a quota never take
// the user past it, and every node reports the same, exact usage: the sum
// of the files that were stored.
func TestQuotaExactAcrossNodes(t *testing.T) {
	c := startCluster(t, 2)
	a := c.nodes[0]
	if code, body := fetch(t, a, "POST", "/api/v1/admin/users", "admin", a.AdminPass, []byte(`{"name":"dora","password":"dora-pass-123","quota":1000000}`)); code != http.StatusCreated {
		t.Fatalf("add user: %d %s", code, body)
	}
	const files, size = 12, 150000 // 1.8 MB offered for a 1 MB quota
	codes := make(chan int, files)
	for i := range files {
		go func() {
			b := make([]byte, size)
			rand.Read(b)
			req, _ := http.NewRequest("PUT", fmt.Sprintf("%s/dav/f%d.bin", c.lb.URL, i), bytes.NewReader(b))
			req.SetBasicAuth("dora", "dora-pass-123")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				codes <- 0
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			codes <- resp.StatusCode
		}()
	}
	stored := 0
	for range files {
		switch code := <-codes; code {
		case http.StatusCreated:
			stored++
		case http.StatusInsufficientStorage, http.StatusTooManyRequests:
			// over quota, or throttled by the in-flight login limit: not stored
		default:
			t.Fatalf("PUT through the balancer: %d", code)
		}
	}
	if stored == 0 || stored*size > 1000000 {
		t.Fatalf("%d files of %d bytes stored under a 1,000,000-byte quota", stored, size)
	}
	for _, d := range c.nodes {
		var q struct{ Finished, Unfinished, Uploading int64 }
		if code := jsonDo(t, d, "GET", "/api/v1/quota", "dora", "dora-pass-123", nil, &q); code != 200 {
			t.Fatalf("quota on %s: %d", d.Addr, code)
		}
		if q.Finished != int64(stored*size) || q.Unfinished != 0 {
			t.Fatalf("quota on %s: %+v; want finished %d (the %d files stored) and nothing in flight", d.Addr, q, stored*size, stored)
		}
	}
}

// Two nodes sharing one --cache-dir and one Redis, reading the same cold
// file at once from four readers each, fetch each chunk from the bucket
// once between them: the sum of their cache fetch counters is the number
// of chunks the directory ends up holding.
func TestSharedCacheDirFetchesEachChunkOnce(t *testing.T) {
	dir := t.TempDir()
	c := startCluster(t, 2, "--cache-dir", dir)
	a := c.nodes[0]
	body := make([]byte, 2<<20)
	rand.Read(body)
	if code, msg := fetch(t, a, "PUT", "/dav/cold.bin", "admin", a.AdminPass, body); code != http.StatusCreated {
		t.Fatalf("PUT: %d %s", code, msg)
	}
	// Cold: the upload left its chunks in the cache; remove them.
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, de := range des {
		os.Remove(filepath.Join(dir, de.Name()))
	}
	before := 0
	for _, d := range c.nodes {
		before += cacheFetches(t, d)
	}
	var wg sync.WaitGroup
	for _, d := range c.nodes {
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				resp, err := d.Do(context.Background(), "GET", "/dav/cold.bin", "admin", a.AdminPass, nil, nil)
				if err != nil {
					t.Error(err)
					return
				}
				got, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || resp.StatusCode != http.StatusOK || !bytes.Equal(got, body) {
					t.Errorf("GET through %s: %d, %d bytes, %v; want the file", d.Addr, resp.StatusCode, len(got), err)
				}
			}()
		}
	}
	wg.Wait()
	fetched := -before
	for _, d := range c.nodes {
		fetched += cacheFetches(t, d)
	}
	des, err = os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	chunks := 0
	for _, de := range des {
		if !strings.HasSuffix(de.Name(), ".tmp") {
			chunks++
		}
	}
	if chunks < 2 || fetched != chunks {
		t.Fatalf("the nodes fetched %d chunks from the bucket for %d distinct chunks, want one fetch each", fetched, chunks)
	}
}

// cacheFetches reads a node's netdisk_chunk_cache_fetches_total.
func cacheFetches(t *testing.T, d *testutil.Daemon) int {
	t.Helper()
	code, m := fetch(t, d, "GET", "/metrics", "admin", d.AdminPass, nil)
	if code != http.StatusOK {
		t.Fatalf("metrics on %s: %d", d.Addr, code)
	}
	for _, line := range strings.Split(m, "\n") {
		if v, ok := strings.CutPrefix(line, "netdisk_chunk_cache_fetches_total "); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				t.Fatalf("metric line %q: %v", line, err)
			}
			return n
		}
	}
	t.Fatalf("no netdisk_chunk_cache_fetches_total on %s", d.Addr)
	return 0
}
