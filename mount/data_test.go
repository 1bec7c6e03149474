package mount_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"netdisk/apitype"
	"netdisk/client"
	"netdisk/testutil"
)

// Copying content the server already holds sends no chunk bytes.
func TestInstantUploadThroughCp(t *testing.T) {
	e := setup(t)
	src := filepath.Join(t.TempDir(), "big.bin")
	data := testutil.RandBytes(20*testChunk + 5)
	os.WriteFile(src, data, 0o644)
	e.sh(`cp ` + src + ` "$M/one.bin"`)
	before := metric(t, e.d, "netdisk_http_bytes_in_total")
	e.sh(`cp ` + src + ` "$M/two.bin" && cp "$M/one.bin" "$M/three.bin"`)
	sent := metric(t, e.d, "netdisk_http_bytes_in_total") - before
	if sent >= testChunk {
		t.Fatalf("copying known content sent %v bytes to the server", sent)
	}
	for _, n := range []string{"two.bin", "three.bin"} {
		if got := mustRead(t, filepath.Join(e.mnt, n)); !bytes.Equal(got, data) {
			t.Fatalf("%s differs", n)
		}
	}
}

// A random read fetches only the chunk it touches; a chunk cached for one
// file serves another file holding it; a file changed elsewhere is read
// afresh after the TTL.
func TestChunkReadsAndCache(t *testing.T) {
	e := setup(t, func(o *optsT) { o.Prefetch = -1 })
	data := testutil.RandBytes(16 * testChunk)
	if err := os.WriteFile(filepath.Join(e.mnt, "f.bin"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	// Freshly mounted second view with an empty cache, so reads go to the server.
	e.cache = nil
	e.mount(func(o *optsT) { o.Prefetch = -1 })
	out := metric(t, e.d, "netdisk_http_bytes_out_total")
	f, err := os.Open(filepath.Join(e.mnt, "f.bin"))
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	if _, err := f.ReadAt(buf, 9*testChunk+100); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if !bytes.Equal(buf, data[9*testChunk+100:9*testChunk+100+4096]) {
		t.Fatal("random read returned wrong bytes")
	}
	got := metric(t, e.d, "netdisk_http_bytes_out_total") - out
	if got > 3*testChunk { // kernel readahead may touch a neighbour
		t.Fatalf("a 4 KiB read fetched %v bytes", got)
	}
	if e.cache.Size() == 0 || e.cache.Size() > 3*testChunk {
		t.Fatalf("cache holds %d bytes", e.cache.Size())
	}
	// Another file with the same content is served from the cache.
	e.sh(`cp "$M/f.bin" "$M/g.bin"`) // server-known content: instant
	out = metric(t, e.d, "netdisk_http_bytes_out_total")
	g, _ := os.Open(filepath.Join(e.mnt, "g.bin"))
	g.ReadAt(buf, 9*testChunk+100)
	g.Close()
	if d := metric(t, e.d, "netdisk_http_bytes_out_total") - out; d > 2*testChunk {
		t.Logf("note: reading g.bin fetched %v bytes (readahead into neighbours)", d)
	}

	// Changed by someone else (WebDAV PUT): visible after the TTL.
	newData := testutil.RandBytes(3 * testChunk)
	resp, err := e.d.Do(context.Background(), "PUT", "/dav/f.bin", "alice", "alice-pass", newData, nil)
	if err != nil || resp.StatusCode/100 != 2 {
		t.Fatalf("PUT: %v %v", resp, err)
	}
	resp.Body.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, err := os.ReadFile(filepath.Join(e.mnt, "f.bin"))
		if err == nil && bytes.Equal(b, newData) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the change made over WebDAV is not visible (len %d, %v)", len(b), err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// With the server gone, operations fail with EHOSTDOWN instead of hanging;
// written data stays staged and is stored once it is back.
func TestServerDown(t *testing.T) {
	clk := testutil.NewClock(time.Now())
	e := setup(t, func(o *optsT) { o.OpTimeout = 2 * time.Second; o.UploadTimeout = 3 * time.Second; o.Now = clk.Now })
	p := filepath.Join(e.mnt, "keep.txt")
	os.WriteFile(p, []byte("v1"), 0o644)
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("v2 written while the server is down")
	e.d.Stop()
	start := time.Now()
	err = f.Sync()
	if err == nil || !errorsIs(err, syscall.EHOSTDOWN) {
		t.Fatalf("fsync with the server down: %v", err)
	}
	if _, err := os.Stat(filepath.Join(e.mnt, "nothere")); err == nil {
		t.Fatal("stat of a new name succeeded with the server down")
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("failing took %v", d)
	}
	e.d.Restart()
	clk.Advance(time.Minute) // the mount's next look at the server is due
	if err := f.Sync(); err != nil {
		t.Fatalf("fsync after the server came back: %v", err)
	}
	f.Close()
	ent, err := e.be.Stat(context.Background(), "/keep.txt")
	if err != nil || ent.Size != int64(len("v2 written while the server is down")) {
		t.Fatalf("server has %+v %v", ent, err)
	}
}

// A file written in order has its full chunks sent while it is written:
// fsync then commits it, every byte crosses the network once, and the
// sessions that carried the chunks are given up afterwards (quota back to
// the file alone). A file written out of order is uploaded whole at close.
func TestSendAheadWhileWriting(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	data := testutil.RandBytes(10*testChunk + 5)
	before := metric(t, e.d, "netdisk_http_bytes_in_total")
	f, err := os.Create(filepath.Join(e.mnt, "seq.bin"))
	if err != nil {
		t.Fatal(err)
	}
	for off := 0; off < len(data); off += 4096 {
		if _, err := f.Write(data[off:min(off+4096, len(data))]); err != nil {
			t.Fatal(err)
		}
	}
	// Before any fsync or close, the full chunks reach the server.
	for deadline := time.Now().Add(10 * time.Second); metric(t, e.d, "netdisk_http_bytes_in_total")-before < 10*testChunk; {
		if time.Now().After(deadline) {
			t.Fatalf("only %v bytes reached the server while writing", metric(t, e.d, "netdisk_http_bytes_in_total")-before)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	ent, err := e.be.Stat(ctx, "/seq.bin")
	if err != nil || ent.Size != int64(len(data)) {
		t.Fatalf("after fsync the server has %+v, %v", ent, err)
	}
	f.Close()
	if sent := metric(t, e.d, "netdisk_http_bytes_in_total") - before; sent > float64(len(data))+float64(testChunk) {
		t.Fatalf("writing %d bytes sent %v bytes", len(data), sent)
	}
	// Read back through the server, not the mount.
	serverHolds(t, e, "/seq.bin", "alice", "alice-pass", data)
	deadline := time.Now().Add(10 * time.Second)
	for {
		q, err := e.c.Quota(ctx)
		if err == nil && q.Uploading == 0 && q.Unfinished == 0 && q.Finished == int64(len(data)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("quota stays %+v, %v: sessions not given up", q, err)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// Out of order: the second chunk first.
	g, err := os.Create(filepath.Join(e.mnt, "ooo.bin"))
	if err != nil {
		t.Fatal(err)
	}
	g.WriteAt(data[testChunk:3*testChunk], testChunk)
	g.WriteAt(data[:testChunk], 0)
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if got := mustRead(t, filepath.Join(e.mnt, "ooo.bin")); !bytes.Equal(got, data[:3*testChunk]) {
		t.Fatalf("out-of-order file differs")
	}
}

// mountBobWithQuota mounts the drive as a new user bob with a quota of
// total bytes.
func mountBobWithQuota(t *testing.T, total int64) *env {
	t.Helper()
	e := setup(t)
	admin := client.New(e.d.URL, "admin", e.d.AdminPass)
	if _, err := admin.AdminAddUser(context.Background(), apitype.NewUser{Name: "bob", Password: "bob-pass", Quota: total}); err != nil {
		t.Fatal(err)
	}
	e.c = client.New(e.d.URL, "bob", "bob-pass")
	e.mount()
	return e
}

// df shows the user's quota: size = quota, used = the user's files.
func TestDfShowsQuota(t *testing.T) {
	e := mountBobWithQuota(t, 100<<20)
	ctx := context.Background()
	if err := os.WriteFile(filepath.Join(e.mnt, "f"), testutil.RandBytes(3<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	// Sessions that carried chunks are given up in the background: poll.
	for deadline := time.Now().Add(10 * time.Second); ; {
		var st syscall.Statfs_t
		if err := syscall.Statfs(e.mnt, &st); err != nil {
			t.Fatal(err)
		}
		// Free is what the file and its entry's charge leave, in whole blocks.
		q, err := e.c.Quota(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := (100<<20 - q.Finished - q.Metadata) / 4096 * 4096
		total, free := int64(st.Blocks)*st.Bsize, int64(st.Bavail)*st.Bsize
		if total == 100<<20 && free == want && q.Finished == 3<<20 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("df: total %d free %d, want %d and %d (quota %+v)", total, free, 100<<20, want, q)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// df's used is the user's files; an upload under way (another client's)
// is not used space but is not available either: seed 001 counts it apart.
func TestDfCountsUploadsApart(t *testing.T) {
	e := mountBobWithQuota(t, 100<<20)
	ctx := context.Background()
	if _, err := e.c.Upload(ctx, "/have.bin", bytes.NewReader(testutil.RandBytes(3<<20)), 3<<20); err != nil {
		t.Fatal(err)
	}
	const declared = 10 << 20
	s, err := e.c.Init(ctx, "/coming.bin", declared, "")
	if err != nil {
		t.Fatal(err)
	}
	chunk := testutil.RandBytes(int(s.ChunkSize))
	sum := md5.Sum(chunk)
	if err := e.c.UploadChunk(ctx, s.UploadID, 0, hex.EncodeToString(sum[:]), chunk); err != nil {
		t.Fatal(err)
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(e.mnt, &st); err != nil {
		t.Fatal(err)
	}
	q, err := e.c.Quota(ctx)
	if err != nil || q.Finished != 3<<20 {
		t.Fatalf("quota: %+v %v", q, err)
	}
	// Used is the files and their entries' charge, in whole blocks; the
	// open upload's declared bytes are only left out of what is available.
	const bs = 4096
	has := q.Finished + q.Metadata
	wantUsed := (has + bs - 1) / bs * bs
	wantAvail := (100<<20 - has - declared) / bs * bs
	total, used, avail := int64(st.Blocks)*st.Bsize, int64(st.Blocks-st.Bfree)*st.Bsize, int64(st.Bavail)*st.Bsize
	if total != 100<<20 || used != wantUsed || avail != wantAvail {
		t.Fatalf("df: size %d used %d avail %d; want %d, %d (the files and their entries) and %d (less the open upload)",
			total, used, avail, 100<<20, wantUsed, wantAvail)
	}
}

// A file larger than half the free quota still fits: the chunks sent ahead
// while writing hold reservations of their own, so the upload at close gives
// them back and tries again when the quota refuses it.
func TestSendAheadNearFullQuota(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	admin := client.New(e.d.URL, "admin", e.d.AdminPass)
	const quota = 30 * testChunk
	if _, err := admin.AdminAddUser(ctx, apitype.NewUser{Name: "carol", Password: "carol-pass", Quota: quota}); err != nil {
		t.Fatal(err)
	}
	e.c = client.New(e.d.URL, "carol", "carol-pass")
	e.mount()
	data := testutil.RandBytes(20 * testChunk) // 2/3 of the quota: twice would not fit
	if err := os.WriteFile(filepath.Join(e.mnt, "big.bin"), data, 0o644); err != nil {
		t.Fatalf("writing 2/3 of the quota through the mount: %v", err)
	}
	serverHolds(t, e, "/big.bin", "carol", "carol-pass", data)
	// And a file that really does not fit is refused with EDQUOT (the
	// user's quota; a full server disk is ENOSPC).
	err := os.WriteFile(filepath.Join(e.mnt, "too-big.bin"), testutil.RandBytes(20*testChunk), 0o644)
	if !errors.Is(err, syscall.EDQUOT) {
		t.Fatalf("over quota through the mount: %v, want EDQUOT", err)
	}
}

// serverHolds reads p over WebDAV as user (the server, not the mount) and
// requires it to be data.
func serverHolds(t *testing.T, e *env, p, user, pass string, data []byte) {
	t.Helper()
	resp, err := e.d.Do(context.Background(), "GET", "/dav"+p, user, pass, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !bytes.Equal(got, data) {
		t.Fatalf("the server holds %d other bytes at %s (%d)", len(got), p, resp.StatusCode)
	}
}
