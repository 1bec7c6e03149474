package drive_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"netdisk/davlock"
	"netdisk/drive/drivetest"
	"netdisk/errs"
)

// A move across the boundary of a share (out of one, into one, between
// two owners' shares; files and folders) is a copy of the chunk references
// charged to the destination's owner and a delete of the source into its
// owner's trash: no chunk is written. One that cannot be done (the
// destination owner's quota, a lock, a read-only source) changes nothing
// on either side.
func TestShareMoveAcross(t *testing.T) {
	e := drivetest.New(t, drivetest.Options{ChunkSize: testChunk})
	f := &fixture{d: e.Drive, m: e.Meta, dir: e.Dir, a: e.AddUser(t, "alice", 0), b: e.AddUser(t, "bob", 0)}
	carol := e.AddUser(t, "carol", 0)
	ctx := context.Background()
	a, b, c := f.a.ID, f.b.ID, carol.ID
	for _, d := range []struct {
		uid int64
		p   string
	}{{a, "/docs"}, {a, "/docs/sub"}, {a, "/ro"}, {c, "/inbox"}, {b, "/ownd"}, {b, "/ownd/y"}} {
		_, err := f.d.Mkdir(ctx, d.uid, d.p)
		must(t, err)
	}
	f.put(t, a, "/docs/a.txt", []byte("alpha"))
	f.put(t, a, "/docs/sub/b.bin", random(1, 3000))
	f.put(t, a, "/ro/r.txt", []byte("read only"))
	f.put(t, b, "/own.bin", random(2, 2500))
	f.put(t, b, "/ownd/x.bin", random(3, 1000))
	f.put(t, b, "/ownd/y/z.bin", random(4, 500))
	_, err := f.d.ShareWithUser(ctx, a, "/docs", "bob", true)
	must(t, err)
	_, err = f.d.ShareWithUser(ctx, a, "/ro", "bob", false)
	must(t, err)
	_, err = f.d.ShareWithUser(ctx, c, "/inbox", "bob", true)
	must(t, err)

	blobs := countBlobs(t, f.dir)
	if blobs == 0 {
		t.Fatal("no chunk blob stored: the count below would prove nothing")
	}
	finished := func(uid int64) int64 {
		t.Helper()
		q, err := f.d.QuotaOf(ctx, uid)
		must(t, err)
		return q.Finished
	}
	gone := func(uid int64, p string) {
		t.Helper()
		if _, err := f.d.Stat(ctx, uid, p); !errs.Is(err, errs.NotFound) {
			t.Fatalf("%d's %s is still there: %v", uid, p, err)
		}
		if _, err := f.d.TrashItemAt(ctx, uid, p); err != nil {
			t.Fatalf("%d's %s is not in their trash: %v", uid, p, err)
		}
	}
	fa, fb, fc := finished(a), finished(b), finished(c)
	moved := func(what string, da, db, dc int64) {
		t.Helper()
		if got := [3]int64{finished(a) - fa, finished(b) - fb, finished(c) - fc}; got != [3]int64{da, db, dc} {
			t.Fatalf("%s: finished bytes of alice, bob, carol moved by %v, want %v", what, got, [3]int64{da, db, dc})
		}
		fa, fb, fc = finished(a), finished(b), finished(c)
		if n := countBlobs(t, f.dir); n != blobs {
			t.Fatalf("%s: %d chunk blobs, was %d: bytes were written", what, n, blobs)
		}
	}

	// Out of a share into bob's own tree: the file is bob's, alice's copy
	// in her trash.
	must(t, f.d.Move(ctx, b, "/docs/sub/b.bin", "/b.bin", false))
	if got := f.get(t, b, "/b.bin"); !bytes.Equal(got, random(1, 3000)) {
		t.Fatal("the file moved out of the share differs")
	}
	gone(a, "/docs/sub/b.bin")
	moved("file out", -3000, 3000, 0)

	// Bob's folder into the share: alice's.
	must(t, f.d.Move(ctx, b, "/ownd", "/docs/ownd", false))
	if got := f.get(t, a, "/docs/ownd/y/z.bin"); !bytes.Equal(got, random(4, 500)) {
		t.Fatal("the folder moved into the share differs")
	}
	gone(b, "/ownd")
	moved("folder in", 1500, -1500, 0)

	// Between two owners' shares.
	must(t, f.d.Move(ctx, b, "/docs/a.txt", "/inbox/a.txt", false))
	if got := f.get(t, c, "/inbox/a.txt"); string(got) != "alpha" {
		t.Fatalf("carol's a.txt: %q", got)
	}
	gone(a, "/docs/a.txt")
	moved("file between shares", -5, 0, 5)

	// Past the destination owner's quota: refused, nothing changes.
	q, err := f.d.QuotaOf(ctx, c)
	must(t, err)
	must(t, f.d.SetQuota(ctx, "carol", q.Finished+q.Metadata+200))
	wantKind(t, "a file past the owner's quota", f.d.Move(ctx, b, "/own.bin", "/inbox/own.bin", false), errs.Quota)
	wantKind(t, "a folder past the owner's quota", f.d.Move(ctx, b, "/docs/ownd", "/inbox/ownd", false), errs.Quota)
	for _, p := range []string{"/own.bin", "/docs/ownd/x.bin", "/docs/ownd/y/z.bin"} {
		if _, err := f.d.Stat(ctx, b, p); err != nil {
			t.Fatalf("the source of a refused move: %v", err)
		}
	}
	for _, p := range []string{"/inbox/own.bin", "/inbox/ownd"} {
		if _, err := f.d.Stat(ctx, c, p); !errs.Is(err, errs.NotFound) {
			t.Fatalf("a refused move left %s: %v", p, err)
		}
	}
	for _, uid := range []int64{a, b, c} {
		items, err := f.d.TrashList(ctx, uid, 0, 100)
		must(t, err)
		for _, it := range items {
			if it.Path == "/own.bin" || it.Path == "/docs/ownd" || it.Path == "/inbox/ownd" {
				t.Fatalf("a refused move put %s in a trash", it.Path)
			}
		}
	}
	moved("refused", 0, 0, 0)

	// A read-only share as the source: refused, nothing copied.
	wantKind(t, "out of a read-only share", f.d.Move(ctx, b, "/ro/r.txt", "/r.txt", false), errs.ReadOnly)
	if _, err := f.d.Stat(ctx, b, "/r.txt"); !errs.Is(err, errs.NotFound) {
		t.Fatalf("a move out of a read-only share copied: %v", err)
	}

	// A lock on the source (alice's, deep in the folder) and one on the
	// destination bind the move unless the request holds their tokens.
	l, err := f.d.Locks().Create(a, davlock.Lock{Root: "/docs/ownd/y/z.bin", Timeout: time.Hour})
	must(t, err)
	wantKind(t, "a locked source", f.d.Move(ctx, b, "/docs/ownd", "/ownd", false), errs.Locked)
	if _, err := f.d.Stat(ctx, b, "/ownd"); !errs.Is(err, errs.NotFound) {
		t.Fatalf("a move of a locked source copied: %v", err)
	}
	dl, err := f.d.Locks().Create(b, davlock.Lock{Root: "/ownd", Timeout: time.Hour})
	must(t, err)
	wantKind(t, "a locked destination", f.d.Move(davlock.WithTokens(ctx, []string{l.Token}), b, "/docs/ownd", "/ownd", false), errs.Locked)
	must(t, f.d.Move(davlock.WithTokens(ctx, []string{l.Token, dl.Token}), b, "/docs/ownd", "/ownd", false))
	gone(a, "/docs/ownd")
	moved("locked folder out, with the tokens", -1500, 1500, 0)

	// What still cannot change hands: a share's entry, and a folder of
	// bob's holding one (it would hand a third user's share on).
	wantKind(t, "an entry into a share", f.d.Move(ctx, b, "/ro", "/docs/ro", false), errs.CrossTree)
	_, err = f.d.Mkdir(ctx, b, "/holder")
	must(t, err)
	must(t, f.d.Move(ctx, b, "/ro", "/holder/ro", false))
	wantKind(t, "a folder holding an entry", f.d.Move(ctx, b, "/holder", "/docs/holder", false), errs.CrossTree)
	if _, err := f.d.Stat(ctx, b, "/holder/ro/r.txt"); err != nil {
		t.Fatal(err)
	}
	fb = finished(b)

	// An existing destination without overwrite: Exists, nothing changes.
	f.put(t, a, "/docs/keep.txt", []byte("keep"))
	blobs = countBlobs(t, f.dir)
	fa = finished(a)
	wantKind(t, "onto an existing file", f.d.Move(ctx, b, "/b.bin", "/docs/keep.txt", false), errs.Exists)
	if got := f.get(t, a, "/docs/keep.txt"); string(got) != "keep" {
		t.Fatalf("the existing destination changed: %q", got)
	}
	if _, err := f.d.Stat(ctx, b, "/b.bin"); err != nil {
		t.Fatal(err)
	}
	moved("onto an existing file", 0, 0, 0)
}
