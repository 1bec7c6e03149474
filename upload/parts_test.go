package upload

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"testing"
	"time"

	"netdisk/chunker"
	"netdisk/drive"
	"netdisk/errs"
	"netdisk/meta"
	"netdisk/testutil"
)

// A sync client's chunked upload is an upload session: its announced total
// is reserved when it opens (a second one that cannot fit beside it is
// refused), parts of any size, in any order and sent again are re-cut into
// the drive's own chunks (the same ones a PUT of the content makes), the
// staged pieces become garbage once the file is committed, and an upload
// left alone expires with the sessions, giving its reservation back.
func TestPartsSessionOnSessions(t *testing.T) {
	e := newEnv(t) // chunks of testChunk (1 KiB) bytes
	ctx := context.Background()
	uid := e.user("alice", 10_000)
	now := e.clock.Now
	free := func() int64 {
		t.Helper()
		q, err := e.d.QuotaOf(ctx, uid)
		if err != nil {
			t.Fatal(err)
		}
		return q.Free()
	}
	before := free()

	// The reservation is made at the open.
	if err := e.d.OpenPartsSession(ctx, uid, "s1", "1", 3000, now()); err != nil {
		t.Fatal(err)
	}
	if got := free(); got != before-3000 {
		t.Fatalf("free after opening a 3000-byte upload: %d, want %d", got, before-3000)
	}
	if err := e.d.OpenPartsSession(ctx, uid, "s2", "2", before-2000, now()); !errs.Is(err, errs.Quota) {
		t.Fatalf("a second upload the quota cannot hold beside the first: %v", err)
	}
	if err := e.d.OpenPartsSession(ctx, uid, "s1", "1", 3000, now()); !errs.Is(err, errs.Exists) {
		t.Fatalf("the same upload opened again: %v", err)
	}

	// Parts of 700, 1100 and 1200 bytes straddle the 1 KiB boundaries; the
	// last arrives first, the first twice (other bytes, then the right ones).
	data := testutil.RandBytes(3000)
	put := func(name string, b []byte) {
		t.Helper()
		if n, err := e.d.PutSessionPart(ctx, uid, "s1", name, bytes.NewReader(b), 3000, now()); err != nil || n != int64(len(b)) {
			t.Fatalf("part %s: %d, %v", name, n, err)
		}
	}
	put("1800", data[1800:])
	put("0", testutil.RandBytes(700))
	put("700", data[700:1800])
	put("0", data[:700])
	parts, err := e.d.SessionParts(ctx, uid, "s1")
	if err != nil {
		t.Fatal(err)
	}
	var listed []int64
	for _, p := range parts {
		listed = append(listed, p.Size)
	}
	if len(parts) != 3 || parts[0].Name != "0" || parts[1].Name != "700" || parts[2].Name != "1800" || listed[0] != 700 || listed[1] != 1100 || listed[2] != 1200 {
		t.Fatalf("parts listed: %+v", parts)
	}

	// A total that the parts do not make, or a wrong checksum, leave the
	// upload as it was.
	if _, _, err := e.d.AssembleSession(ctx, uid, "s1", "/f.bin", drive.AssembleOptions{Total: 3001}, now()); !errs.Is(err, errs.Conflict) {
		t.Fatalf("assembly with a part missing: %v", err)
	}
	if _, _, err := e.d.AssembleSession(ctx, uid, "s1", "/f.bin", drive.AssembleOptions{Total: 3000, WantSHA1: hex.EncodeToString(make([]byte, 20))}, now()); !errs.Is(err, errs.Mismatch) {
		t.Fatalf("assembly with a wrong checksum: %v", err)
	}
	sum := sha1.Sum(data)
	n, existed, err := e.d.AssembleSession(ctx, uid, "s1", "/f.bin", drive.AssembleOptions{Total: 3000, WantSHA1: hex.EncodeToString(sum[:])}, now())
	if err != nil || existed || n.Size != 3000 {
		t.Fatalf("assembly: %+v %v %v", n, existed, err)
	}
	if got := e.read(uid, "/f.bin"); !bytes.Equal(got, data) {
		t.Fatal("the assembled file differs from what was sent")
	}
	// Cut as the drive cuts: the same chunks as a PUT of the content.
	if _, _, err := e.d.PutFile(ctx, uid, "/g.bin", drive.PutOptions{Size: 3000}, bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	if a, b := chunkSHAs(t, e, uid, "/f.bin"), chunkSHAs(t, e, uid, "/g.bin"); len(a) != 3 || !equalStrings(a, b) {
		t.Fatalf("chunks of the assembled file %v, of a PUT of the same bytes %v", a, b)
	}
	for i, sha := range chunkSHAs(t, e, uid, "/f.bin") {
		if want := chunker.HashChunk(data[i*testChunk : min((i+1)*testChunk, len(data))]).SHA256; sha != want {
			t.Fatalf("chunk %d: %s, want %s", i, sha, want)
		}
	}
	if _, err := e.d.SessionParts(ctx, uid, "s1"); !errors.Is(err, meta.ErrNoSession) {
		t.Fatalf("the upload after its assembly: %v", err)
	}
	// The pieces (the wrong first part, the straddling ones) are garbage:
	// GC takes them, and the files read back whole.
	if r, err := e.d.GC(ctx); err != nil || r.Chunks < 3 {
		t.Fatalf("GC after the assembly: %+v %v", r, err)
	}
	if got := e.read(uid, "/f.bin"); !bytes.Equal(got, data) {
		t.Fatal("the assembled file after GC")
	}
	afterFiles := free()
	if q, err := e.d.QuotaOf(ctx, uid); err != nil || q.Uploading != 0 || q.Finished != 6000 {
		t.Fatalf("after two 3000-byte files: %+v %v: the reservation was not turned into the file", q, err)
	}

	// Abandoned: expires with the sessions on the clock, its parts and
	// reservation go with it.
	if err := e.d.OpenPartsSession(ctx, uid, "s3", "3", 2000, now()); err != nil {
		t.Fatal(err)
	}
	if _, err := e.d.PutSessionPart(ctx, uid, "s3", "0", bytes.NewReader(data[:1500]), 2000, now()); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(30 * time.Minute)
	if n, err := e.s.Expire(ctx); err != nil || n != 0 {
		t.Fatalf("expiry within the TTL: %d %v", n, err)
	}
	e.clock.Advance(31 * time.Minute)
	if n, err := e.s.Expire(ctx); err != nil || n < 1 { // and the merged s1, past its retention
		t.Fatalf("expiry past the TTL: %d %v", n, err)
	}
	if _, err := e.d.SessionParts(ctx, uid, "s3"); !errors.Is(err, meta.ErrNoSession) {
		t.Fatalf("the expired upload: %v", err)
	}
	if got := free(); got != afterFiles {
		t.Fatalf("free after the expiry: %d, want %d", got, afterFiles)
	}

	// Opened without a total: the assembly reserves the parts' sum then.
	if err := e.d.OpenPartsSession(ctx, uid, "s4", "4", 0, now()); err != nil {
		t.Fatal(err)
	}
	if _, err := e.d.PutSessionPart(ctx, uid, "s4", "1", bytes.NewReader(data[:1234]), -1, now()); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.d.AssembleSession(ctx, uid, "s4", "/h.bin", drive.AssembleOptions{Total: -1}, now()); err != nil {
		t.Fatal(err)
	}
	if got := e.read(uid, "/h.bin"); !bytes.Equal(got, data[:1234]) {
		t.Fatal("the file of an upload without a total")
	}
	if open, err := e.d.CountOpenSessions(ctx); err != nil || open != 0 {
		t.Fatalf("open sessions at the end: %d %v", open, err)
	}
	if q, err := e.d.QuotaOf(ctx, uid); err != nil || q.Uploading != 0 {
		t.Fatalf("reserved at the end: %+v %v", q, err)
	}
}

func chunkSHAs(t *testing.T, e *env, uid int64, p string) []string {
	t.Helper()
	n, err := e.d.Stat(context.Background(), uid, p)
	if err != nil {
		t.Fatal(err)
	}
	fcs, err := e.d.FileChunks(context.Background(), n)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range fcs {
		out = append(out, c.SHA256)
	}
	return out
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
