package drive_test

import (
	"bytes"
	"context"
	"io"
	"testing"

	"netdisk/chunker"
	"netdisk/drive"
)

// A one-chunk file up to InlineMax is committed with its bytes in the
// metadata store: no blob is written, and every reader of chunk bytes (the
// Reader, GET's segments, fsck, GC, dedup across users) sees it as any chunk.
func TestSmallFileInline(t *testing.T) {
	f := newFixtureChunk(t, 0) // the production chunk size: 4 KiB is one short chunk
	ctx := context.Background()
	data := random(60, 4096)
	f.put(t, f.a.ID, "/small", data)
	f.put(t, f.b.ID, "/same", data) // bob's copy: deduplicated
	if n := countBlobs(t, f.dir); n != 0 {
		t.Fatalf("%d blobs for an inline file, want 0", n)
	}
	if st, err := f.d.Stats(ctx); err != nil || st.Chunks != 1 || st.PhysicalBytes != 4096 {
		t.Fatalf("stats %+v, %v: want one 4096-byte chunk", st, err)
	}
	if got := f.get(t, f.b.ID, "/same"); !bytes.Equal(got, data) {
		t.Fatal("inline file reads back wrong")
	}
	// GET's path: the segment opens through the drive's chunk store.
	r, err := f.d.Open(ctx, f.a.ID, "/small")
	if err != nil {
		t.Fatal(err)
	}
	segs := r.Segments(100, 50)
	if len(segs) != 1 {
		t.Fatalf("segments %+v", segs)
	}
	rc, err := f.d.OpenSegment(ctx, segs[0])
	if err != nil {
		t.Fatal(err)
	}
	rc.Seek(100, io.SeekStart)
	part := make([]byte, 50)
	if _, err := io.ReadFull(rc, part); err != nil || !bytes.Equal(part, data[100:150]) {
		t.Fatalf("segment read %v", err)
	}
	rc.Close()
	r.Close()
	if res, err := f.d.Fsck(ctx, nil); err != nil || res.Checked != 1 || len(res.Problems) != 0 {
		t.Fatalf("fsck of an inline chunk: %+v, %v", res, err)
	}
	// GC keeps it while bob holds it, then frees it.
	if err := f.d.Remove(ctx, f.a.ID, "/small"); err != nil {
		t.Fatal(err)
	}
	if res, err := f.d.GC(ctx); err != nil || res.Chunks != 0 {
		t.Fatalf("GC freed a chunk bob holds: %+v, %v", res, err)
	}
	if err := f.d.Remove(ctx, f.b.ID, "/same"); err != nil {
		t.Fatal(err)
	}
	if res, err := f.d.GC(ctx); err != nil || res.Chunks != 0 {
		t.Fatalf("GC freed a chunk the trash holds: %+v, %v", res, err)
	}
	for _, u := range []int64{f.a.ID, f.b.ID} {
		if _, err := f.d.EmptyTrash(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	if res, err := f.d.GC(ctx); err != nil || res.Chunks != 1 {
		t.Fatalf("GC after the last holder left: %+v, %v", res, err)
	}
	sum := chunker.HashChunk(data)
	if _, ok, err := f.m.ChunkData(ctx, sum.SHA256); err != nil || ok {
		t.Fatalf("inline bytes outlived GC: %v, %v", ok, err)
	}
}

// A file larger than InlineMax, or of more than one chunk, is stored as blobs.
func TestLargerFilesAreBlobs(t *testing.T) {
	f := newFixtureChunk(t, 0)
	f.put(t, f.a.ID, "/big", random(61, drive.InlineMax+1))
	if n := countBlobs(t, f.dir); n != 1 {
		t.Fatalf("%d blobs for a one-chunk file past InlineMax, want 1", n)
	}
	g := newFixture(t) // small chunks: a 3-chunk file under InlineMax
	g.put(t, g.a.ID, "/multi", random(62, 2*testChunk+1))
	if n := countBlobs(t, g.dir); n != 3 {
		t.Fatalf("%d blobs for a 3-chunk file, want 3", n)
	}
}
