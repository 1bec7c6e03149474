package drive_test

import (
	"bytes"
	"context"
	"slices"
	"testing"

	"netdisk/testutil"
)

// The write path gives every golden vector (testdata/identity) the chunks
// and file hash coreutils md5sum gives it, at the vector's chunk size.
func TestWriteMatchesIdentityVectors(t *testing.T) {
	ctx := context.Background()
	fixtures := map[int64]*fixture{}
	for _, v := range testutil.IdentityVectors(t) {
		f := fixtures[v.ChunkSize]
		if f == nil {
			f = newFixtureChunk(t, v.ChunkSize)
			fixtures[v.ChunkSize] = f
		}
		n := f.put(t, f.a.ID, "/v", v.Data())
		if n.FileHash != v.FileHash {
			t.Errorf("%s: file hash %s, want %s", v.Name, n.FileHash, v.FileHash)
		}
		cs, err := f.m.FileChunks(ctx, n.ID)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, c := range cs {
			got = append(got, c.MD5)
		}
		if !slices.Equal(got, v.Chunks) {
			t.Errorf("%s: chunks %v, want %v", v.Name, got, v.Chunks)
		}
	}
}

// Two contents with one MD5 (testdata/md5collision) are two chunks, and each
// file reads back as its own bytes: MD5 names content in the protocol, it
// never decides which bytes are served.
func TestMD5CollisionStoredApart(t *testing.T) {
	a, b := testutil.MD5Collision(t)
	f := newFixture(t)
	na := f.put(t, f.a.ID, "/a.bin", a)
	nb := f.put(t, f.b.ID, "/b.bin", b)
	if na.FileHash != nb.FileHash {
		t.Fatalf("file hashes differ (%s, %s): the pair is cut into different chunks", na.FileHash, nb.FileHash)
	}
	if !bytes.Equal(f.get(t, f.a.ID, "/a.bin"), a) || !bytes.Equal(f.get(t, f.b.ID, "/b.bin"), b) {
		t.Fatal("a file of the collision pair reads back as the other's bytes")
	}
	// The pair is small, so both are kept inline (InlineMax): two chunk
	// records, told apart by SHA-256.
	if st, err := f.m.Stats(context.Background()); err != nil || st.Chunks != 2 {
		t.Fatalf("%+v, %v: want 2 chunks for two colliding contents", st, err)
	}
}

// Every odd name (testdata/names.txt) is created, listed and read back as
// itself, and names differing only in Unicode normalisation stay apart.
func TestOddNames(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	names := testutil.OddNames(t)
	if _, err := f.d.Mkdir(ctx, f.a.ID, "/odd"); err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		f.put(t, f.a.ID, "/odd/"+name, []byte(name))
	}
	ns, err := f.d.List(ctx, f.a.ID, "/odd")
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, n := range ns {
		listed = append(listed, n.Name())
	}
	slices.Sort(listed)
	if !slices.Equal(listed, names) {
		t.Fatalf("listed %q,\nwant %q", listed, names)
	}
	for _, name := range names {
		if got := f.get(t, f.a.ID, "/odd/"+name); string(got) != name {
			t.Errorf("%q reads back %q", name, got)
		}
	}
}
