package drive_test

import (
	"bytes"
	"context"
	"testing"
	"testing/iotest"

	"netdisk/drive"
	"netdisk/errs"
)

// TestWriteAnnouncedSizeDoesNotCutChunks: a small announced size gives the
// writer a small buffer; a body that turns out longer (or a size announced
// wrong) must still be cut at the chunk size, through Write and ReadFrom, so
// content identity never depends on what the client announced.
func TestWriteAnnouncedSizeDoesNotCutChunks(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	data := random(7, 3*testChunk+5)
	for _, announced := range []int64{0, 1, 10, testChunk - 2, testChunk - 1, testChunk, -1} {
		for _, viaReadFrom := range []bool{false, true} {
			w, err := f.d.Create(ctx, f.a.ID, "/f", drive.WriteOptions{ExpectedSize: announced})
			if err != nil {
				t.Fatal(err)
			}
			if viaReadFrom {
				// One byte per Read: every buffer edge is crossed by a read.
				_, err = w.ReadFrom(iotest.OneByteReader(bytes.NewReader(data)))
			} else {
				for off := 0; off < len(data) && err == nil; off += 7 {
					_, err = w.Write(data[off:min(off+7, len(data))])
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			n, err := w.Commit()
			if err != nil {
				t.Fatal(err)
			}
			if n.Size != int64(len(data)) || n.FileHash != expectedHash(data) {
				t.Fatalf("announced %d, ReadFrom %v: node %+v, want hash %s", announced, viaReadFrom, n, expectedHash(data))
			}
			cs, err := f.m.FileChunks(ctx, n.ID)
			if err != nil {
				t.Fatal(err)
			}
			if len(cs) != 4 || cs[0].Size != testChunk || cs[2].Size != testChunk || cs[3].Size != 5 {
				t.Fatalf("announced %d, ReadFrom %v: chunks %+v", announced, viaReadFrom, cs)
			}
			if got := f.get(t, f.a.ID, "/f"); !bytes.Equal(got, data) {
				t.Fatalf("announced %d, ReadFrom %v: read back differs", announced, viaReadFrom)
			}
		}
	}
}

// TestWriterExisted tells a new file from a replaced one (PUT answers 201 or
// 204 from it).
func TestWriterExisted(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	for i, want := range []bool{false, true} {
		w, err := f.d.Create(ctx, f.a.ID, "/g", drive.WriteOptions{ExpectedSize: 3})
		if err != nil {
			t.Fatal(err)
		}
		if w.Existed() != want {
			t.Fatalf("write %d: Existed() = %v, want %v", i, w.Existed(), want)
		}
		w.Write([]byte("abc"))
		if _, err := w.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	// The same checks as before on the parent: none, or a file.
	if _, err := f.d.Mkdir(ctx, f.a.ID, "/d"); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]errs.Kind{"/nope/x": errs.NoParent, "/g/x": errs.NotDir, "/d": errs.IsDir, "/": errs.IsDir} {
		if _, err := f.d.Create(ctx, f.a.ID, p, drive.WriteOptions{ExpectedSize: 1}); errs.KindOf(err) != want {
			t.Fatalf("Create %s: %v, want kind %v", p, err, want)
		}
	}
}
