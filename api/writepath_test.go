package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"netdisk/api"
	"netdisk/apitype"
	"netdisk/chunker"
	"netdisk/dedup"
	"netdisk/drive"
	"netdisk/meta"
	"netdisk/quota"
	"netdisk/testutil"
	"netdisk/upload"
)

// TestChunkWritePathGoesStraightDown follows a chunk's bytes call by call,
// from the real HTTP handlers of init, uploadChunk, patchHash (a chunk the
// user already holds) and merge down to the stores the drive is given: at
// every store call (the blob written, the ledger stepped, the session row
// changed) the netdisk packages on the stack, outermost first, run
// api → upload → drive and never re-enter a package they left. A callback
// that climbs back from drive into upload to step the ledger or record the
// chunk shows up as drive → upload on these stacks.
func TestChunkWritePathGoesStraightDown(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	m, err := meta.OpenSQLite(ctx, filepath.Join(dir, "meta.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	disk, err := dedup.NewDiskStore(filepath.Join(dir, "chunks"))
	if err != nil {
		t.Fatal(err)
	}
	rec := &callRecorder{}
	sink := quota.NewSQLiteSink(m, nil)
	g := quota.NewGuard(tracedLedger{quota.NewMemory(quota.Config{Sink: sink, Log: logger}), rec}, sink, logger)
	tm := &tracedMeta{SQLStore: m, rec: rec}
	const cs = 64 << 10
	d := drive.New(drive.Config{Meta: tm, Blobs: tracedBlobs{disk, rec}, Quota: g, ChunkSize: cs, Logger: logger})
	up := upload.New(upload.Config{Drive: d, DB: tm, Logger: logger})
	g.SetTruth(d)
	if err := g.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	u, err := d.AddUser(ctx, "wanda", "pw-wanda", false, 0)
	if err != nil {
		t.Fatal(err)
	}
	a := api.New(d, logger)
	a.Upload = up
	mux := http.NewServeMux()
	for _, rt := range a.Routes() {
		h := rt.Handler
		mux.HandleFunc(rt.Pattern, func(w http.ResponseWriter, r *http.Request) { h(w, r, u) })
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	data := make([]byte, 2*cs+100)
	for i := range data {
		data[i] = byte(i*7 + i/251)
	}
	chunk := func(i int) []byte { return data[i*cs : min((i+1)*cs, len(data))] }
	var md5s, shas []string
	for i := 0; i*cs < len(data); i++ {
		md5s = append(md5s, testutil.MD5Hex(chunk(i)))
		shas = append(shas, sha256hex(chunk(i)))
	}
	call := func(method, path string, body []byte, out any) {
		t.Helper()
		req, err := http.NewRequest(method, srv.URL+path, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if method == "POST" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
		}
		if out != nil {
			if err := json.Unmarshal(b, out); err != nil {
				t.Fatalf("%s %s: %v", method, path, err)
			}
		}
	}
	jsonOf := func(v any) []byte { b, _ := json.Marshal(v); return b }
	size := int64(len(data))

	// A session that sends every chunk's bytes.
	var s1 apitype.Session
	call("POST", "/api/v1/file/init", jsonOf(map[string]any{"path": "/a/f.bin", "size": size}), &s1)
	for i := range md5s {
		call("PUT", fmt.Sprintf("/api/v1/file/uploadChunk?uploadId=%s&index=%d&hash=%s", s1.UploadID, i, md5s[i]), chunk(i), nil)
	}
	fileHash := chunker.FileHash(md5s)
	call("POST", "/api/v1/file/merge", jsonOf(apitype.MergeRequest{UploadID: s1.UploadID, FileHash: fileHash}), nil)

	// A second session that claims chunk 0 by its hashes (the user holds
	// it) and sends the rest.
	var s2 apitype.Session
	call("POST", "/api/v1/file/init", jsonOf(map[string]any{"path": "/b.bin", "size": size}), &s2)
	idx := int64(0)
	var ph apitype.PatchHashResult
	call("POST", "/api/v1/file/patchHash", jsonOf(apitype.PatchHashRequest{UploadID: s2.UploadID, Index: &idx, Hash: md5s[0], SHA256: shas[0]}), &ph)
	if !ph.Exists {
		t.Fatalf("patchHash of a chunk the user holds: %+v, want exists", ph)
	}
	for i := 1; i < len(md5s); i++ {
		call("PUT", fmt.Sprintf("/api/v1/file/uploadChunk?uploadId=%s&index=%d&hash=%s", s2.UploadID, i, md5s[i]), chunk(i), nil)
	}
	call("POST", "/api/v1/file/merge", jsonOf(apitype.MergeRequest{UploadID: s2.UploadID, FileHash: fileHash}), nil)

	// The layers, top down; the stores' own packages are the bottom one.
	layer := map[string]int{"netdisk/api": 0, "netdisk/upload": 1, "netdisk/drive": 2,
		"netdisk/quota": 3, "netdisk/dedup": 3, "netdisk/meta": 3}
	seen := map[string]int{}
	for _, c := range rec.calls() {
		seen[c.store]++
		down := len(c.chain) >= 3 && c.chain[0] == "netdisk/api" && c.chain[1] == "netdisk/upload" && c.chain[2] == "netdisk/drive"
		for i, pkg := range c.chain {
			l, ok := layer[pkg]
			if !ok || i > 0 && l <= layer[c.chain[i-1]] {
				down = false
			}
		}
		if !down {
			t.Errorf("%s ran under %s; want api → upload → drive (→ quota, dedup or meta), each package entered once, never one above",
				c.store, strings.Join(c.chain, " → "))
		}
	}
	// Every store call the path makes was seen: three blobs written once
	// (the second session's are the same content), a ledger Chunk and a
	// recorded chunk for each of the six indexes, the two sessions opened
	// and merged.
	for store, n := range map[string]int{"blob Put": 3, "ledger Chunk": 6, "meta AddSessionChunk": 6,
		"ledger Reserve": 2, "meta CreateSession": 2, "meta MergeSession": 2, "ledger Commit": 2} {
		if seen[store] < n {
			t.Errorf("%s seen %d times, want at least %d (all: %v)", store, seen[store], n, seen)
		}
	}
}

// storeCall is a call into one of the drive's stores with the netdisk
// packages that were on the stack, outermost first, consecutive frames of
// one package counted once.
type storeCall struct {
	store string
	chain []string
}

type callRecorder struct {
	mu  sync.Mutex
	log []storeCall
}

func (r *callRecorder) note(store string) {
	pcs := make([]uintptr, 256)
	n := runtime.Callers(2, pcs)
	frames := runtime.CallersFrames(pcs[:n])
	var inner []string
	for {
		f, more := frames.Next()
		if pkg := funcPackage(f.Function); strings.HasPrefix(pkg, "netdisk/") && pkg != "netdisk/api_test" {
			// The test's own frames (the handler adapter outside, the
			// recording stores inside) are the harness, not a layer.
			inner = append(inner, pkg)
		}
		if !more {
			break
		}
	}
	var chain []string
	for i := len(inner) - 1; i >= 0; i-- {
		if len(chain) == 0 || chain[len(chain)-1] != inner[i] {
			chain = append(chain, inner[i])
		}
	}
	r.mu.Lock()
	r.log = append(r.log, storeCall{store, chain})
	r.mu.Unlock()
}

func (r *callRecorder) calls() []storeCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]storeCall(nil), r.log...)
}

// funcPackage is the import path of a runtime function name such as
// "netdisk/drive.(*Drive).PutSessionChunk.func1".
func funcPackage(fn string) string {
	slash := strings.LastIndexByte(fn, '/')
	dot := strings.IndexByte(fn[slash+1:], '.')
	if dot < 0 {
		return fn
	}
	return fn[:slash+1+dot]
}

// The drive's real stores, each noting the calls that change what an upload
// session holds.

type tracedBlobs struct {
	dedup.BlobStore
	rec *callRecorder
}

func (s tracedBlobs) Put(ctx context.Context, key dedup.Key, b []byte) error {
	s.rec.note("blob Put")
	return s.BlobStore.Put(ctx, key, b)
}

type tracedLedger struct {
	quota.Ledger
	rec *callRecorder
}

func (l tracedLedger) Reserve(ctx context.Context, user int64, id string, declared int64) (quota.Usage, error) {
	l.rec.note("ledger Reserve")
	return l.Ledger.Reserve(ctx, user, id, declared)
}

func (l tracedLedger) Chunk(ctx context.Context, user int64, id string, index int, n int64) error {
	l.rec.note("ledger Chunk")
	return l.Ledger.Chunk(ctx, user, id, index, n)
}

func (l tracedLedger) Commit(ctx context.Context, user int64, id string, size int64) (quota.Released, error) {
	l.rec.note("ledger Commit")
	return l.Ledger.Commit(ctx, user, id, size)
}

// tracedMeta is the SQLite store (every method of it, so the drive finds its
// transactional upgrades) with the session changes noted.
type tracedMeta struct {
	*meta.SQLStore
	rec *callRecorder
}

func (m *tracedMeta) CreateSession(ctx context.Context, ss meta.Session, notBefore, now time.Time) (string, error) {
	m.rec.note("meta CreateSession")
	return m.SQLStore.CreateSession(ctx, ss, notBefore, now)
}

func (m *tracedMeta) AddSessionChunk(ctx context.Context, id string, idx int64, c meta.Chunk, now time.Time) error {
	m.rec.note("meta AddSessionChunk")
	return m.SQLStore.AddSessionChunk(ctx, id, idx, c, now)
}

func (m *tracedMeta) MergeSession(ctx context.Context, id string, f meta.NewFile, resultHash string, now time.Time) (meta.Node, int64, int64, error) {
	m.rec.note("meta MergeSession")
	return m.SQLStore.MergeSession(ctx, id, f, resultHash, now)
}
