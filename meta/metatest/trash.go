package metatest

import (
	"sync"
	"testing"
	"time"

	"netdisk/errs"
	"netdisk/meta"
)

func (e *env) restore(uid, id int64) (string, error) {
	e.t.Helper()
	var dst string
	err := e.s.Tx(e.ctx, func(tx *meta.Tx) (err error) {
		dst, _, err = e.s.RestoreTrashTx(e.ctx, tx, uid, id, meta.NoGrowthLimit)
		return err
	})
	return dst, err
}

func (e *env) trash(uid int64) []meta.TrashItem {
	e.t.Helper()
	its, err := e.s.ListTrash(e.ctx, uid, 0, 1000)
	e.must(err)
	return its
}

func (e *env) metaCharge(uid int64) int64 {
	e.t.Helper()
	u, err := e.s.UserByID(e.ctx, uid)
	e.must(err)
	return u.Meta
}

// A delete moves the node with its subtree into the trash as one item:
// nothing of it is reachable by path, its bytes and charge leave the
// user's usage, its chunks stay live; a restore brings all of it back.
func testTrash(t *testing.T, e *env) {
	a, b := e.user("alice", 0), e.user("bob", 0)
	e.mkdir(a, "/d")
	e.mkdir(a, "/d/sub")
	e.commit(a, "/d/sub/f", chunk("a", 5))
	e.commit(a, "/d/g", chunk("b", 2))
	e.commit(a, "/keep", chunk("c", 1))
	e.must(e.s.PatchProps(e.ctx, e.stat(a, "/d/g").ID, []meta.Prop{{Space: "ns:", Local: "p", InnerXML: "v"}}, nil))
	fin, charge := e.finished(a), e.metaCharge(a)
	gID := e.stat(a, "/d/g").ID

	e.clock.Advance(1000)
	deleted := e.clock.Now()
	e.must(e.s.Remove(e.ctx, a, "/d"))
	for _, p := range []string{"/d", "/d/sub", "/d/sub/f", "/d/g"} {
		if _, err := e.s.Stat(e.ctx, a, p); !errs.Is(err, errs.NotFound) {
			t.Fatalf("%s after the delete: %v", p, err)
		}
	}
	if kids, err := e.s.List(e.ctx, a, "/"); err != nil || !same(paths(kids), []string{"/keep"}) {
		t.Fatalf("root listing after the delete: %v %v", paths(kids), err)
	}
	if tree, err := e.s.Tree(e.ctx, a, "/", 100); err != nil || !same(paths(tree), []string{"/keep"}) {
		t.Fatalf("tree after the delete: %v %v", paths(tree), err)
	}
	if n, err := e.s.CountTree(e.ctx, a, "/", 100); err != nil || n != 1 {
		t.Fatalf("CountTree after the delete: %d %v", n, err)
	}
	if e.finished(a) != 1 || e.metaCharge(a) != charge-(charge-e.metaCharge(a)) || e.metaCharge(a) >= charge {
		t.Fatalf("usage after the delete: finished %d (was %d), charge %d (was %d)", e.finished(a), fin, e.metaCharge(a), charge)
	}
	if st, err := e.s.Stats(e.ctx); err != nil || st.Files != 1 || st.LogicalBytes != 1 {
		t.Fatalf("Stats count the trash: %+v %v", st, err)
	}
	if un, err := e.s.UnreferencedChunks(e.ctx, 10); err != nil || len(un) != 0 {
		t.Fatalf("a trashed file's chunks are garbage: %+v %v", un, err)
	}
	its := e.trash(a)
	if len(its) != 1 || its[0].Path != "/d" || !its[0].IsDir || its[0].Size != 7 || !its[0].Deleted.Equal(deleted) || its[0].DeletedBy != a || its[0].UserID != a {
		t.Fatalf("trash after the delete: %+v", its)
	}
	id := its[0].ID
	if u, err := e.s.TrashUsage(e.ctx); err != nil || u[a] != 7 || len(u) != 1 {
		t.Fatalf("TrashUsage = %v %v", u, err)
	}

	// Another user's item is the same NotFound as an unknown one.
	_, err := e.restore(b, id)
	wantKind(t, "bob restores alice's item", err, errs.NotFound)
	_, err = e.restore(a, id+1000)
	wantKind(t, "restore of an unknown item", err, errs.NotFound)
	wantKind(t, "bob expunges alice's item", e.s.ExpungeTrash(e.ctx, b, id), errs.NotFound)
	_, err = e.s.TrashItem(e.ctx, b, id)
	wantKind(t, "bob reads alice's item", err, errs.NotFound)

	dst, err := e.restore(a, id)
	if err != nil || dst != "/d" {
		t.Fatalf("restore = %q, %v", dst, err)
	}
	if e.stat(a, "/d/sub/f").Size != 5 || e.stat(a, "/d/g").ID != gID || e.finished(a) != fin || e.metaCharge(a) != charge {
		t.Fatalf("after the restore: finished %d (want %d), charge %d (want %d)", e.finished(a), fin, e.metaCharge(a), charge)
	}
	if ps, _ := e.s.Props(e.ctx, gID); len(ps) != 1 {
		t.Fatalf("properties after the restore: %+v", ps)
	}
	if len(e.trash(a)) != 0 {
		t.Fatalf("the item stays in the trash after its restore: %+v", e.trash(a))
	}
	_, err = e.restore(a, id)
	wantKind(t, "second restore", err, errs.NotFound)

	// A taken name: the restore picks a free one and never overwrites.
	e.must(e.s.Remove(e.ctx, a, "/d/g"))
	e.commit(a, "/d/g", chunk("n", 3))
	e.must(e.s.Remove(e.ctx, a, "/d/g"))
	e.commit(a, "/d/g", chunk("m", 4))
	its = e.trash(a)
	if len(its) != 2 || its[0].Size != 3 || its[1].Size != 2 {
		t.Fatalf("trash newest first: %+v", its)
	}
	if dst, err := e.restore(a, its[1].ID); err != nil || dst != "/d/g (restored)" {
		t.Fatalf("restore over a taken name = %q, %v", dst, err)
	}
	if dst, err := e.restore(a, its[0].ID); err != nil || dst != "/d/g (restored 2)" {
		t.Fatalf("second restore over a taken name = %q, %v", dst, err)
	}
	if e.stat(a, "/d/g").Size != 4 || e.stat(a, "/d/g (restored)").Size != 2 || e.stat(a, "/d/g (restored 2)").Size != 3 {
		t.Fatal("a restore replaced something")
	}

	// Missing folders come back; a file where a folder was is NotDir and
	// changes nothing. (An hour apart: the folder's delete does not take
	// the file back, as it would moments later — testTrashFoldsLeafFirst.)
	e.must(e.s.Remove(e.ctx, a, "/d/sub/f"))
	e.clock.Advance(time.Hour)
	e.must(e.s.Remove(e.ctx, a, "/d"))
	its = e.trash(a)
	fileItem, dirItem := its[1].ID, its[0].ID
	if dst, err := e.restore(a, fileItem); err != nil || dst != "/d/sub/f" || !e.stat(a, "/d/sub").IsDir {
		t.Fatalf("restore into missing folders = %q, %v", dst, err)
	}
	if dst, err := e.restore(a, dirItem); err != nil || dst != "/d (restored)" {
		t.Fatalf("folder restore over a taken name = %q, %v", dst, err)
	}
	if e.stat(a, "/d (restored)/g").Size != 4 {
		t.Fatal("the folder came back without its files")
	}
	e.must(e.s.Remove(e.ctx, a, "/d/sub/f"))
	fileItem = e.trash(a)[0].ID
	e.commit(a, "/d/h", chunk("h", 1))
	e.clock.Advance(time.Hour)
	e.must(e.s.Remove(e.ctx, a, "/d"))
	e.commit(a, "/d", chunk("x", 1))
	_, err = e.restore(a, fileItem)
	wantKind(t, "restore under a file", err, errs.NotDir)
	if _, err := e.s.TrashItem(e.ctx, a, fileItem); err != nil {
		t.Fatalf("a refused restore lost the item: %v", err)
	}

	// Expunging frees the chunks only the item held.
	e.must(e.s.ExpungeTrash(e.ctx, a, fileItem))
	wantKind(t, "expunge twice", e.s.ExpungeTrash(e.ctx, a, fileItem), errs.NotFound)
	un, err := e.s.UnreferencedChunks(e.ctx, 10)
	e.must(err)
	if len(un) != 1 || un[0].SHA256 != "sha-a" {
		t.Fatalf("unreferenced after the expunge: %+v", un)
	}
	n, err := e.s.EmptyTrash(e.ctx, a)
	if err != nil || n != 1 || len(e.trash(a)) != 0 {
		t.Fatalf("EmptyTrash = %d, %v; left %+v", n, err, e.trash(a))
	}
	un, _ = e.s.UnreferencedChunks(e.ctx, 10)
	if len(un) != 2 {
		t.Fatalf("unreferenced after emptying: %+v", un)
	}
	if e.stat(a, "/d (restored)/g").Size != 4 || e.stat(a, "/d").Size != 1 {
		t.Fatal("emptying the trash touched the tree")
	}
	e.must(e.s.Remove(e.ctx, a, "/d (restored)"))
	if lost, err := e.s.CheckTrash(e.ctx); err != nil || len(lost) != 0 {
		t.Fatalf("CheckTrash of a sound trash: %q, %v", lost, err)
	}
}

// A replace with a folder on either side takes what was there to the trash.
func testTrashReplace(t *testing.T, e *env) {
	a := e.user("alice", 0)
	e.mkdir(a, "/d")
	e.commit(a, "/d/f", chunk("a", 5))
	e.commit(a, "/g", chunk("b", 2))
	e.must(e.s.Move(e.ctx, a, "/g", "/d", true))
	its := e.trash(a)
	if len(its) != 1 || its[0].Path != "/d" || its[0].Size != 5 || e.finished(a) != 2 {
		t.Fatalf("file moved over a folder: trash %+v, finished %d", its, e.finished(a))
	}
	e.mkdir(a, "/e")
	e.must(e.s.Copy(e.ctx, a, "/e", "/d", true, true))
	its = e.trash(a)
	if len(its) != 2 || its[0].Path != "/d" || its[0].IsDir || its[0].Size != 2 {
		t.Fatalf("folder copied over a file: trash %+v", its)
	}
	if dst, err := e.restore(a, its[1].ID); err != nil || dst != "/d (restored)" || e.stat(a, "/d (restored)/f").Size != 5 {
		t.Fatalf("restore = %q, %v", dst, err)
	}
	// The drive's delete (RemoveTx, inside its quota step) trashes too.
	e.must(e.s.Tx(e.ctx, func(tx *meta.Tx) error {
		delta, err := e.s.RemoveTx(e.ctx, tx, a, "/d (restored)")
		if err == nil && delta != -(5+meta.EntryCharge("d (restored)")+meta.EntryCharge("f")) {
			t.Errorf("RemoveTx moved the charge by %d", delta)
		}
		return err
	}))
	if its := e.trash(a); len(its) != 2 || its[0].Path != "/d (restored)" || its[0].Size != 5 {
		t.Fatalf("trash after RemoveTx: %+v", its)
	}
}

// Paging, age order, quota on restore, concurrent restores, a deleted user.
func testTrashLists(t *testing.T, e *env) {
	a := e.user("alice", 2000)
	for i := range 5 {
		e.commit(a, "/f", chunk(string(rune('a'+i)), 3))
		e.clock.Advance(1000)
		e.must(e.s.Remove(e.ctx, a, "/f"))
	}
	all := e.trash(a)
	p1, err := e.s.ListTrash(e.ctx, a, 0, 2)
	e.must(err)
	p2, err := e.s.ListTrash(e.ctx, a, p1[1].ID, 2)
	e.must(err)
	if len(all) != 5 || len(p1) != 2 || len(p2) != 2 || p1[0].ID != all[0].ID || p2[0].ID != all[2].ID || !all[0].Deleted.After(all[4].Deleted) {
		t.Fatalf("pages %+v %+v of %+v", p1, p2, all)
	}
	old, err := e.s.OldestTrash(e.ctx, 0, all[2].Deleted, 10)
	e.must(err)
	if len(old) != 2 || old[0].ID != all[4].ID || old[1].ID != all[3].ID {
		t.Fatalf("OldestTrash before the third deletion: %+v", old)
	}
	// The trash is not in the quota: a restore that does not fit is refused.
	// 100 bytes stay free; a 3-byte file's entry alone costs 257.
	e.commit(a, "/big", chunk("big", 2000-meta.EntryCharge("big")-100))
	_, err = e.restore(a, all[0].ID)
	wantKind(t, "restore past the quota", err, errs.Quota)
	e.must(e.s.Remove(e.ctx, a, "/big"))

	// Of two restores of one item, one wins and the other is NotFound.
	var wg sync.WaitGroup
	errc := make(chan error, 2)
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := e.restore(a, all[1].ID)
			errc <- err
		}()
	}
	wg.Wait()
	close(errc)
	var ok, nf int
	for err := range errc {
		switch {
		case err == nil:
			ok++
		case errs.Is(err, errs.NotFound):
			nf++
		default:
			t.Fatalf("concurrent restore: %v", err)
		}
	}
	if ok != 1 || nf != 1 {
		t.Fatalf("concurrent restores: %d won, %d NotFound", ok, nf)
	}
	// A deleted user's trash goes with them.
	e.must(e.s.DeleteUser(e.ctx, a))
	if u, err := e.s.TrashUsage(e.ctx); err != nil || len(u) != 0 {
		t.Fatalf("TrashUsage after the user's deletion: %v %v", u, err)
	}
}

// testTrashFoldsLeafFirst: a tree deleted leaf first, one entry at a time
// (rm -rf over the mount), ends as one item: each folder's delete takes back
// the items deleted from under it moments before, so a restore brings the
// whole tree back, charges and all. An older delete, or a second delete of
// a path already taken back, stays an item of its own.
func testTrashFoldsLeafFirst(t *testing.T, e *env) {
	a := e.user("alice", 0)
	e.mkdir(a, "/x")
	e.mkdir(a, "/x/sub")
	e.commit(a, "/x/old", chunk("o", 1))
	e.must(e.s.Remove(e.ctx, a, "/x/old")) // long before the rm -rf
	e.clock.Advance(time.Hour)
	e.commit(a, "/x/a", chunk("a", 3))
	e.must(e.s.Remove(e.ctx, a, "/x/a")) // deleted, written again, deleted again
	e.commit(a, "/x/a", chunk("b", 4))
	e.commit(a, "/x/sub/f", chunk("f", 5))
	e.commit(a, "/x/keep", chunk("k", 2))
	fin, charge := e.finished(a), e.metaCharge(a)
	for _, p := range []string{"/x/sub/f", "/x/sub", "/x/a", "/x/keep", "/x"} {
		e.clock.Advance(1000)
		e.must(e.s.Remove(e.ctx, a, p))
	}
	its := e.trash(a)
	if len(its) != 3 || its[0].Path != "/x" || its[0].Size != 4+5+2 || its[1].Path != "/x/a" || its[2].Path != "/x/old" {
		t.Fatalf("trash after a leaf-first delete: %+v", its)
	}
	if dst, err := e.restore(a, its[0].ID); err != nil || dst != "/x" {
		t.Fatalf("restore of the folder: %q, %v", dst, err)
	}
	for p, size := range map[string]int64{"/x/a": 4, "/x/sub/f": 5, "/x/keep": 2} {
		if n := e.stat(a, p); n.Size != size {
			t.Fatalf("%s restored with %d bytes, want %d", p, n.Size, size)
		}
	}
	if e.finished(a) != fin || e.metaCharge(a) != charge {
		t.Fatalf("after the restore finished %d charge %d, want %d %d", e.finished(a), e.metaCharge(a), fin, charge)
	}
	if its := e.trash(a); len(its) != 2 {
		t.Fatalf("trash after the restore: %+v", its)
	}
}
