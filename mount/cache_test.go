package mount_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"netdisk/apitype"
	"netdisk/client"
	"netdisk/mount"
	"netdisk/testutil"
)

// setupCache is setup with the daemon's chunk size and the chunk cache (in
// dir, of max bytes) chosen by the test.
func setupCache(t *testing.T, chunkSize, dir string, max int64, opts ...func(*mount.Options)) *env {
	t.Helper()
	testutil.RequireTool(t, "fusermount3")
	d := testutil.StartDaemon(t, "--chunk-size", chunkSize)
	admin := client.New(d.URL, "admin", d.AdminPass)
	if _, err := admin.AdminAddUser(context.Background(), apitype.NewUser{Name: "alice", Password: "alice-pass"}); err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, d: d, c: client.New(d.URL, "alice", "alice-pass")}
	var err error
	if e.cache, err = mount.OpenChunkCache(dir, max); err != nil {
		t.Fatal(err)
	}
	e.mount(opts...)
	return e
}

func (e *env) put(name string, data []byte) {
	e.t.Helper()
	resp, err := e.d.Do(context.Background(), "PUT", "/dav/"+name, "alice", "alice-pass", data, nil)
	if err != nil || resp.StatusCode/100 != 2 {
		e.t.Fatalf("PUT %s: %v %v", name, resp, err)
	}
	resp.Body.Close()
}

// Two files forming an MD5 collision are two chunks on the server and
// each reads back as its own bytes through one mount, also from a second
// mount sharing the cache folder, and a cached file that does not hash to
// its key is discarded, not served.
func TestMD5CollisionThroughOneMount(t *testing.T) {
	a, b := testutil.MD5Collision(t)
	dir := filepath.Join(t.TempDir(), "chunks")
	e := setupCache(t, "64KiB", dir, 64<<20)
	e.put("a.bin", a)
	e.put("b.bin", b)
	ctx := context.Background()
	ca, err := e.c.Chunks(ctx, "/a.bin")
	if err != nil {
		t.Fatal(err)
	}
	cb, err := e.c.Chunks(ctx, "/b.bin")
	if err != nil {
		t.Fatal(err)
	}
	if len(ca.Chunks) != 1 || len(cb.Chunks) != 1 {
		t.Fatalf("chunks: %+v %+v", ca, cb)
	}
	sa, sb := sha256.Sum256(a), sha256.Sum256(b)
	if ca.Chunks[0].MD5 != cb.Chunks[0].MD5 || ca.Chunks[0].SHA256 != hex.EncodeToString(sa[:]) || cb.Chunks[0].SHA256 != hex.EncodeToString(sb[:]) {
		t.Fatalf("the server does not keep the pair as two chunks: %+v %+v", ca.Chunks[0], cb.Chunks[0])
	}

	check := func(when string) {
		t.Helper()
		for _, f := range []struct {
			name string
			want []byte
		}{{"a.bin", a}, {"b.bin", b}, {"a.bin", a}, {"b.bin", b}} {
			if got := mustRead(t, filepath.Join(e.mnt, f.name)); !bytes.Equal(got, f.want) {
				t.Fatalf("%s: %s returned the other file's bytes", when, f.name)
			}
			e.cache.Wait() // the chunk is on disk before the other file is read
		}
	}
	check("one mount")
	for _, k := range []string{ca.Chunks[0].SHA256, cb.Chunks[0].SHA256} {
		if _, err := os.Stat(filepath.Join(dir, k)); err != nil {
			t.Fatalf("chunk not cached under its SHA-256: %v", err)
		}
	}

	// A second mount on the same folder finds b's file holding a's bytes
	// (damage, or a writer that lied): it must fetch b, not serve that.
	bad := filepath.Join(dir, cb.Chunks[0].SHA256)
	if err := os.WriteFile(bad+".x", a, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(bad+".x", bad); err != nil {
		t.Fatal(err)
	}
	if e.cache, err = mount.OpenChunkCache(dir, 64<<20); err != nil {
		t.Fatal(err)
	}
	e.mount()
	check("shared cache folder")
	if got, _ := os.ReadFile(bad); !bytes.Equal(got, b) {
		t.Fatal("the damaged cache file was not replaced by the chunk's bytes")
	}
}

// logCapture collects slog records of level Warn and above.
type logCapture struct {
	mu   sync.Mutex
	msgs []string
}

func (l *logCapture) Enabled(_ context.Context, lv slog.Level) bool { return lv >= slog.LevelWarn }
func (l *logCapture) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.msgs = append(l.msgs, r.Message)
	return nil
}
func (l *logCapture) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logCapture) WithGroup(string) slog.Handler      { return l }
func (l *logCapture) count(sub string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, m := range l.msgs {
		if strings.Contains(m, sub) {
			n++
		}
	}
	return n
}

// Emptying the cache folder while mounted costs each chunk one fetch, not
// one per kernel read; the folder is recreated (logged once) and filled
// again. A folder that cannot be recreated still costs one fetch a chunk.
func TestCacheDirCleanedWhileMounted(t *testing.T) {
	logs := &logCapture{}

	const chunk = 1 << 20
	base := t.TempDir()
	dir := filepath.Join(base, "chunks")
	// A cache of 32 MiB keeps 8 MiB in memory: less than the file.
	e := setupCache(t, "1MiB", dir, 32<<20, func(o *mount.Options) { o.Prefetch = 2 })
	e.cache.Logger = slog.New(logs)
	data := testutil.RandBytes(20*chunk + 12345)
	e.put("big.bin", data)
	size := float64(len(data))

	// pass reads the file with 128 KiB reads and returns the bytes the
	// server sent meanwhile.
	pass := func(when string) float64 {
		t.Helper()
		before := metric(t, e.d, "netdisk_http_bytes_out_total")
		f, err := os.Open(filepath.Join(e.mnt, "big.bin"))
		if err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		buf := make([]byte, 128<<10)
		for {
			n, err := f.Read(buf)
			got.Write(buf[:n])
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", when, err)
			}
		}
		f.Close()
		if !bytes.Equal(got.Bytes(), data) {
			t.Fatalf("%s: wrong bytes", when)
		}
		e.cache.Wait()
		sent := metric(t, e.d, "netdisk_http_bytes_out_total") - before
		t.Logf("%s: %v bytes from the server", when, sent)
		return sent
	}
	// Replies other than chunk bytes (chunk lists) are small.
	const slack = 64 << 10

	if sent := pass("first pass"); sent > size+slack {
		t.Fatalf("first pass: the server sent %v bytes for a %v-byte file", sent, size)
	}
	if sent := pass("cached pass"); sent > slack {
		t.Fatalf("cached pass: the server sent %v bytes", sent)
	}

	// A cleaner empties the cache folder.
	des, _ := os.ReadDir(base)
	for _, de := range des {
		if err := os.RemoveAll(filepath.Join(base, de.Name())); err != nil {
			t.Fatal(err)
		}
	}
	if sent := pass("after cleaning"); sent > size+slack {
		t.Fatalf("after cleaning: the server sent %v bytes for a %v-byte file (chunks fetched again per read)", sent, size)
	}
	des, err := os.ReadDir(dir)
	if err != nil || len(des) < 20 {
		t.Fatalf("the cache folder was not filled again: %d files, %v", len(des), err)
	}
	if n := logs.count("recreated"); n != 1 {
		t.Fatalf("%d warnings about the recreated folder, want 1: %q", n, logs.msgs)
	}
	if sent := pass("cached again"); sent > slack {
		t.Fatalf("cached again: the server sent %v bytes", sent)
	}

	// Now the folder cannot come back (a file took its name): every write
	// fails, and still no chunk is fetched twice in a pass.
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if sent := pass("unwritable cache"); sent > size+slack {
		t.Fatalf("unwritable cache: the server sent %v bytes for a %v-byte file", sent, size)
	}
}
