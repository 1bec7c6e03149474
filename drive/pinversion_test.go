package drive_test

import (
	"bytes"
	"context"
	"io"
	"testing"
)

// A version pinned for an async download or a pull stays readable when the
// file is overwritten and the replaced content's version is then deleted
// and collected: the pin holds its chunks from GC (as skipped, in use)
// until it is dropped, and only then are they garbage. Both chunk homes:
// inline in the metadata (small chunks) and blobs.
func TestPinnedVersionOutlivesOverwriteAndExpunge(t *testing.T) {
	for _, chunk := range []int64{testChunk, 64 << 10} {
		f := newFixtureChunk(t, chunk)
		ctx := context.Background()
		a := f.a.ID
		old := random(1, int(5*chunk+17))
		f.put(t, a, "/f", old)
		n, cs, unpin, err := f.d.PinVersion(ctx, a, "/f")
		if err != nil {
			t.Fatal(err)
		}
		f.put(t, a, "/f", random(2, int(3*chunk)))
		_, vs, err := f.d.FileVersions(ctx, a, "/f")
		if err != nil || len(vs) != 1 {
			t.Fatalf("chunk %d: versions after the overwrite: %+v %v", chunk, vs, err)
		}
		if err := f.d.DeleteVersion(ctx, a, "/f", vs[0].ID); err != nil {
			t.Fatal(err)
		}
		res, err := f.d.GC(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if res.Chunks != 0 || res.SkippedInUse != int64(len(cs)) {
			t.Fatalf("chunk %d: GC with the old content pinned: %+v, want its %d chunks skipped", chunk, res, len(cs))
		}
		r := f.d.OpenVersion(ctx, n, cs)
		got, err := io.ReadAll(r)
		r.Close()
		if err != nil || !bytes.Equal(got, old) {
			t.Fatalf("chunk %d: the pinned version read back %d bytes, %v; want the %d it held", chunk, len(got), err, len(old))
		}
		unpin()
		unpin() // a second call does nothing
		if res, err = f.d.GC(ctx); err != nil || res.Chunks != int64(len(cs)) || res.SkippedInUse != 0 {
			t.Fatalf("chunk %d: GC after the unpin: %+v, %v; want the %d chunks freed", chunk, res, err, len(cs))
		}
		if got := f.get(t, a, "/f"); !bytes.Equal(got, random(2, int(3*chunk))) {
			t.Fatalf("chunk %d: the current content changed", chunk)
		}
	}
}
