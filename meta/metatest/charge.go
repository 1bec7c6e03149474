package metatest

import (
	"strings"
	"testing"

	"netdisk/errs"
	"netdisk/meta"
)

// testCharge: every entry but the root costs EntryBytes plus its name's
// bytes, every dead property its bytes (meta/charge.go), on every change that
// makes, copies, renames or removes them; the charge is kept apart from the
// finished bytes, the two are admitted together under the total, and the *Tx
// changes report both to the ledger as one figure.
func testCharge(t *testing.T, e *env) {
	a := e.user("alice", 0)
	want := int64(0)
	check := func(what string) {
		t.Helper()
		u, err := e.s.UserByID(e.ctx, a)
		e.must(err)
		if u.Meta != want {
			t.Fatalf("%s: charged %d, want %d", what, u.Meta, want)
		}
	}
	check("a new user")
	e.mkdir(a, "/dé") // names count in bytes
	want += meta.EntryBytes + int64(len("dé"))
	check("mkdir")
	f := e.commit(a, "/dé/f.txt", chunk("a", 10))
	want += meta.EntryCharge("f.txt")
	check("a new file")
	e.commit(a, "/dé/f.txt", chunk("b", 20))
	check("a new version of a file (no new entry)")
	if e.finished(a) != 20 {
		t.Fatalf("finished %d, want the file bytes alone (20)", e.finished(a))
	}
	p := meta.Prop{Space: "urn:x", Local: "color", Lang: "en", InnerXML: "rouge"}
	e.must(e.s.PatchProps(e.ctx, f.ID, []meta.Prop{p}, nil))
	want += p.Bytes()
	check("a property")
	p2 := p
	p2.InnerXML = "red"
	e.must(e.s.PatchProps(e.ctx, f.ID, []meta.Prop{p2}, nil))
	want += p2.Bytes() - p.Bytes()
	check("a smaller value")
	// A copy of the folder costs its entries (by their new names) and props.
	e.must(e.s.Copy(e.ctx, a, "/dé", "/copy", false, true))
	want += meta.EntryCharge("copy") + meta.EntryCharge("f.txt") + p2.Bytes()
	check("a recursive copy")
	size, err := e.s.SubtreeSize(e.ctx, a, "/copy")
	e.must(err)
	if w := 20 + meta.EntryCharge("copy") + meta.EntryCharge("f.txt") + p2.Bytes(); size != w {
		t.Fatalf("SubtreeSize = %d, want %d (files and charge)", size, w)
	}
	// A rename charges the new name; what is below does not change.
	e.must(e.s.Move(e.ctx, a, "/copy", "/a-longer-name", false))
	want += int64(len("a-longer-name") - len("copy"))
	check("a rename")
	// A move over a file gives the replaced file's charge back.
	e.commit(a, "/x", chunk("c", 1))
	e.commit(a, "/y", chunk("d", 1))
	want += meta.EntryCharge("x") + meta.EntryCharge("y")
	e.must(e.s.Move(e.ctx, a, "/x", "/y", true))
	want -= meta.EntryCharge("x")
	check("a move over a file")
	// Removing a folder gives back all of it, properties included.
	e.must(e.s.Remove(e.ctx, a, "/a-longer-name"))
	want -= meta.EntryCharge("a-longer-name") + meta.EntryCharge("f.txt") + p2.Bytes()
	check("a recursive remove")
	e.must(e.s.PatchProps(e.ctx, f.ID, nil, []meta.Prop{p2}))
	want -= p2.Bytes()
	check("a property removed")
	e.must(e.s.Remove(e.ctx, a, "/dé"))
	e.must(e.s.Remove(e.ctx, a, "/y"))
	want = 0
	check("everything removed")

	// Under a total, entries and files share it: a folder that does not
	// fit is refused, as is a file whose bytes would fit but not its entry.
	b := e.user("bob", 2*meta.EntryCharge("d")+10)
	e.mkdir(b, "/d")
	_, err = e.s.CommitFile(e.ctx, b, "/d/f", file(t0, chunk("e", 11)))
	wantKind(t, "a file whose bytes fit but not its entry", err, errs.Quota)
	e.commit(b, "/d/f", chunk("e", 10)) // exactly the total
	_, err = e.s.Mkdir(e.ctx, b, "/e", t0)
	wantKind(t, "a folder past the total", err, errs.Quota)
	err = e.s.PatchProps(e.ctx, e.stat(b, "/d").ID, []meta.Prop{{Space: "urn:x", Local: "n", InnerXML: "v"}}, nil)
	wantKind(t, "a property past the total", err, errs.Quota)
	wantKind(t, "an empty folder copied past the total", e.s.Copy(e.ctx, b, "/d", "/d2", false, false), errs.Quota)
	e.must(e.s.Move(e.ctx, b, "/d/f", "/d/a-much-longer-name", false)) // never refused
	if u, _ := e.s.UserByID(e.ctx, b); u.Meta+u.Finished != u.QuotaTotal+int64(len("a-much-longer-name")-len("f")) {
		t.Fatalf("after a rename past the total: %+v", u)
	}

	// The *Tx changes report files and charge as one figure, and bound it.
	c := e.user("carol", 0)
	var delta int64
	tx := func(fn func(tx *meta.Tx) error) { t.Helper(); e.must(e.s.Tx(e.ctx, fn)) }
	tx(func(tx *meta.Tx) (err error) {
		_, delta, err = e.s.MkdirTx(e.ctx, tx, c, "/m", t0, 0, meta.NoGrowthLimit)
		return err
	})
	if delta != meta.EntryCharge("m") {
		t.Fatalf("MkdirTx: %d, want %d", delta, meta.EntryCharge("m"))
	}
	err = e.s.Tx(e.ctx, func(tx *meta.Tx) error {
		_, _, err := e.s.MkdirTx(e.ctx, tx, c, "/n", t0, 0, meta.EntryCharge("n")-1)
		return err
	})
	wantKind(t, "MkdirTx beyond maxGrowth", err, errs.Quota)
	tx(func(tx *meta.Tx) (err error) {
		_, delta, err = e.s.CommitFileTx(e.ctx, tx, c, "/m/f", file(t0, chunk("f", 5)), meta.NoGrowthLimit)
		return err
	})
	if want := 5 + meta.EntryCharge("f"); delta != want {
		t.Fatalf("CommitFileTx of a new file: %d, want %d", delta, want)
	}
	p3 := meta.Prop{Space: "urn:x", Local: "k", InnerXML: strings.Repeat("v", 100)}
	tx(func(tx *meta.Tx) (err error) {
		delta, err = e.s.PatchPropsTx(e.ctx, tx, e.stat(c, "/m").ID, []meta.Prop{p3}, nil, p3.Bytes())
		return err
	})
	if delta != p3.Bytes() {
		t.Fatalf("PatchPropsTx: %d, want %d", delta, p3.Bytes())
	}
	tx(func(tx *meta.Tx) (err error) {
		delta, err = e.s.CopyTx(e.ctx, tx, c, "/m", "/m2", false, true, meta.NoGrowthLimit)
		return err
	})
	if want := 5 + meta.EntryCharge("m2") + meta.EntryCharge("f") + p3.Bytes(); delta != want {
		t.Fatalf("CopyTx: %d, want %d", delta, want)
	}
	tx(func(tx *meta.Tx) (err error) {
		delta, err = e.s.RemoveTx(e.ctx, tx, c, "/m")
		return err
	})
	if want := -(5 + meta.EntryCharge("m") + meta.EntryCharge("f") + p3.Bytes()); delta != want {
		t.Fatalf("RemoveTx: %d, want %d", delta, want)
	}
}
