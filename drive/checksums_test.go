package drive_test

import (
	"context"
	"crypto/md5"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"testing"
	"time"

	"netdisk/drive"
	"netdisk/meta"
)

func sums(data []byte) (string, string) {
	m, s := md5.Sum(data), sha1.Sum(data)
	return hex.EncodeToString(m[:]), hex.EncodeToString(s[:])
}

// asMerge is n's content as the upload API's merge commits it: its stored
// chunks, without the content checksums.
func (f *fixture) asMerge(t *testing.T, n meta.Node) meta.NewFile {
	t.Helper()
	chunks, err := f.m.FileChunks(context.Background(), n.ID)
	if err != nil {
		t.Fatal(err)
	}
	nf := meta.NewFile{Size: n.Size, FileHash: n.FileHash}
	for _, c := range chunks {
		nf.Chunks = append(nf.Chunks, c.Chunk)
	}
	return nf
}

// A streamed write knows its content checksums at commit (not the protocol's
// file hash), and a copy or move of the same content keeps them.
func TestWriteRecordsContentChecksums(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	for i, size := range []int{0, 1, testChunk, 3*testChunk + 5} {
		data := random(int64(100+i), size)
		n := f.put(t, f.a.ID, "/f", data)
		wm, ws := sums(data)
		st, err := f.d.Stat(ctx, f.a.ID, "/f")
		if err != nil {
			t.Fatal(err)
		}
		if n.MD5 != wm || n.SHA1 != ws || st.MD5 != wm || st.SHA1 != ws {
			t.Fatalf("size %d: commit %s/%s, stat %s/%s, want %s/%s", size, n.MD5, n.SHA1, st.MD5, st.SHA1, wm, ws)
		}
	}
	data := random(7, 2*testChunk+1)
	f.put(t, f.a.ID, "/g", data)
	wm, ws := sums(data)
	if err := f.d.Copy(ctx, f.a.ID, "/g", "/g2", false, true); err != nil {
		t.Fatal(err)
	}
	if err := f.d.Move(ctx, f.a.ID, "/g2", "/g3", false); err != nil {
		t.Fatal(err)
	}
	if st, err := f.d.Stat(ctx, f.a.ID, "/g3"); err != nil || st.MD5 != wm || st.SHA1 != ws {
		t.Fatalf("copied and moved: %+v %v, want %s/%s", st, err, wm, ws)
	}
}

// Chunks committed without the bytes passing in order (the upload API's merge,
// instant upload: drive.CommitSession) have no checksums until the background pass; the pass fills
// them from the chunks, and never gives a newer version the old one's sums.
func TestChecksumPassFillsCommittedChunks(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	data := random(11, 3*testChunk+7)
	src := f.put(t, f.a.ID, "/src", data)
	nf := f.asMerge(t, src)
	if _, err := f.m.CommitFile(ctx, f.b.ID, "/merged", nf); err != nil {
		t.Fatal(err)
	}
	f.d.KickChecksums() // as drive.CommitSession does
	st, _ := f.d.Stat(ctx, f.b.ID, "/merged")
	if st.MD5 != "" || st.SHA1 != "" {
		t.Fatalf("checksums before the pass: %s/%s", st.MD5, st.SHA1)
	}
	n, err := f.d.FillChecksums(ctx)
	if err != nil || n != 1 {
		t.Fatalf("pass filled %d, %v; want 1", n, err)
	}
	wm, ws := sums(data)
	if st, _ := f.d.Stat(ctx, f.b.ID, "/merged"); st.MD5 != wm || st.SHA1 != ws {
		t.Fatalf("after the pass: %s/%s, want %s/%s", st.MD5, st.SHA1, wm, ws)
	}

	// A version replaced between the listing and the record keeps its own
	// (unknown) checksums: the guard is the version the pass read.
	if _, err := f.m.CommitFile(ctx, f.b.ID, "/merged2", nf); err != nil {
		t.Fatal(err)
	}
	f.d.KickChecksums() // as drive.CommitSession does
	m2, _ := f.d.Stat(ctx, f.b.ID, "/merged2")
	other := f.put(t, f.a.ID, "/other", random(12, testChunk+3))
	of := f.asMerge(t, other)
	if _, err := f.m.CommitFile(ctx, f.b.ID, "/merged2", of); err != nil {
		t.Fatal(err)
	}
	f.d.KickChecksums() // as drive.CommitSession does
	if ok, err := f.m.SetChecksums(ctx, m2.ID, src.FileHash, src.Size, wm, ws); err != nil || ok {
		t.Fatalf("stale checksums recorded: %v %v", ok, err)
	}
	if n, err := f.d.FillChecksums(ctx); err != nil || n != 1 {
		t.Fatalf("second pass filled %d, %v", n, err)
	}
	om, os := sums(random(12, testChunk+3))
	if st, _ := f.d.Stat(ctx, f.b.ID, "/merged2"); st.MD5 != om || st.SHA1 != os {
		t.Fatalf("replaced version: %s/%s, want %s/%s", st.MD5, st.SHA1, om, os)
	}
}

// The background loop finds files left without checksums at start (a
// restart) and runs again when a commit kicks it, not only on its timer.
func TestRunChecksumsAtStartAndOnKick(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := newFixture(t)
	data := random(21, 2*testChunk)
	src := f.put(t, f.a.ID, "/src", data)
	nf := f.asMerge(t, src)
	if _, err := f.m.CommitFile(ctx, f.a.ID, "/before-start", nf); err != nil {
		t.Fatal(err)
	}
	f.d.KickChecksums() // as drive.CommitSession does
	done := make(chan int)
	go f.d.RunChecksums(ctx, time.Hour, done)
	if n := <-done; n != 1 {
		t.Fatalf("first pass filled %d, want 1", n)
	}
	if _, err := f.m.CommitFile(ctx, f.a.ID, "/after-start", nf); err != nil {
		t.Fatal(err)
	}
	f.d.KickChecksums()      // as drive.CommitSession does
	if n := <-done; n != 1 { // the hour-long timer cannot have fired: the commit's kick did it
		t.Fatalf("kicked pass filled %d, want 1", n)
	}
	wm, _ := sums(data)
	if st, _ := f.d.Stat(ctx, f.a.ID, "/after-start"); st.MD5 != wm {
		t.Fatalf("after the kicked pass: %q, want %s", st.MD5, wm)
	}
}

// The pass waits while a chunk body is being received (the upload API's
// chunks of the next file) and fills the file once none is; past its
// per-file limit it reads anyway.
func TestChecksumPassYieldsToUploads(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	data := random(31, 2*testChunk+1)
	nf := f.asMerge(t, f.put(t, f.a.ID, "/src", data))
	wm, ws := sums(data)
	merged := func(p string) {
		t.Helper()
		if _, err := f.m.CommitFile(ctx, f.a.ID, p, nf); err != nil {
			t.Fatal(err)
		}
	}
	filled := func(p string) bool {
		t.Helper()
		st, err := f.d.Stat(ctx, f.a.ID, p)
		if err != nil {
			t.Fatal(err)
		}
		if st.MD5 != "" && (st.MD5 != wm || st.SHA1 != ws) {
			t.Fatalf("%s: checksums %s/%s, want %s/%s", p, st.MD5, st.SHA1, wm, ws)
		}
		return st.MD5 != ""
	}
	pass := func() <-chan int {
		res := make(chan int, 1)
		go func() {
			n, err := f.d.FillChecksums(ctx)
			if err != nil {
				t.Error(err)
			}
			res <- n
		}()
		return res
	}
	yielded := make(chan struct{}, 1)
	drive.OnChecksumsYield(f.d, func() {
		select {
		case yielded <- struct{}{}:
		default:
		}
	})
	drive.SetChecksumsDefer(f.d, time.Hour)
	drive.SetChecksumsQuiet(f.d, 0)

	merged("/a")
	done := f.d.Receiving()
	res := pass()
	<-yielded
	select {
	case n := <-res:
		t.Fatalf("the pass ended (filled %d) while a chunk was being received", n)
	default:
	}
	if filled("/a") {
		t.Fatal("filled while a chunk was being received")
	}
	done()
	done() // once is what counts
	if n := <-res; n != 1 || !filled("/a") {
		t.Fatalf("after the chunk: pass filled %d, want 1", n)
	}

	// Nothing being received: no wait.
	merged("/b")
	if n := <-pass(); n != 1 || !filled("/b") || len(yielded) != 0 {
		t.Fatalf("idle: pass filled %d, waited %d times", n, len(yielded))
	}

	// Right after a chunk (the moment between two of a stream) it waits
	// too: here until its context ends.
	drive.SetChecksumsQuiet(f.d, time.Hour)
	merged("/c")
	f.d.Receiving()()
	cctx, cancel := context.WithCancel(ctx)
	cres := make(chan int, 1)
	go func() {
		n, err := f.d.FillChecksums(cctx)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled pass: %v, want context.Canceled", err)
		}
		cres <- n
	}()
	<-yielded
	cancel()
	if n := <-cres; n != 0 || filled("/c") {
		t.Fatalf("within the quiet time: pass filled %d, want 0", n)
	}

	// Past the limit the pass reads while chunks still arrive.
	drive.SetChecksumsDefer(f.d, 0)
	done = f.d.Receiving()
	defer done()
	if n := <-pass(); n != 1 || !filled("/c") {
		t.Fatalf("past the limit: pass filled %d, want 1", n)
	}
}
