package metatest

import (
	"testing"
	"time"

	"netdisk/errs"
	"netdisk/meta"
)

// Public links: found by token hash with where their node is now (they
// follow it across moves and a new version); listed per user; revoked by
// id by their owner only; a use moves the last use forward only and a
// download counts against the bound, which refuses the one past it; a link
// ends with its node moved into the trash (the folder's or an ancestor's),
// not brought back by a restore, with its node expunged, and with its owner.
func testLinks(t *testing.T, e *env) {
	a, b := e.user("alice", 0), e.user("bob", 0)
	e.mkdir(a, "/d")
	e.mkdir(a, "/d/sub")
	f := e.commit(a, "/d/sub/f", chunk("a", 10))
	d := e.stat(a, "/d")
	add := func(uid, node int64, hash string, max int64) (meta.Link, error) {
		return e.s.CreateLink(e.ctx, meta.Link{UserID: uid, NodeID: node, TokenHash: hash, PassHash: "ph-" + hash,
			Perm: meta.LinkReadWrite, Expires: e.clock.Now().Add(time.Hour), MaxDownloads: max, Created: e.clock.Now()})
	}
	lf, err := add(a, f.ID, "h-f", 2)
	e.must(err)
	ld, err := add(a, d.ID, "h-d", 0)
	e.must(err)
	if lf.ID == 0 || lf.ID == ld.ID || lf.Path != "/d/sub/f" || ld.Path != "/d" {
		t.Fatalf("created %+v and %+v", lf, ld)
	}
	_, err = add(b, f.ID, "h-b", 0)
	wantKind(t, "bob linking alice's file", err, errs.NotFound)
	_, err = add(a, f.ID+1000, "h-x", 0)
	wantKind(t, "a link to nothing", err, errs.NotFound)
	_, err = add(a, d.ID, "h-d", 0)
	wantKind(t, "a token hash twice", err, errs.Exists)

	got, err := e.s.LinkByToken(e.ctx, "h-f")
	e.must(err)
	if got.ID != lf.ID || got.UserID != a || got.NodeID != f.ID || got.PassHash != "ph-h-f" || got.Perm != meta.LinkReadWrite ||
		!got.Expires.Equal(lf.Expires) || got.MaxDownloads != 2 || got.Downloads != 0 || !got.Last.IsZero() || got.Path != "/d/sub/f" {
		t.Fatalf("LinkByToken = %+v, created %+v", got, lf)
	}
	_, err = e.s.LinkByToken(e.ctx, "h-nope")
	wantKind(t, "an unknown token", err, errs.NotFound)

	// The link follows its node: a move of the folder above, a new version.
	e.must(e.s.Move(e.ctx, a, "/d", "/moved", false))
	e.commit(a, "/moved/sub/f", chunk("b", 20))
	got, err = e.s.LinkByToken(e.ctx, "h-f")
	e.must(err)
	if got.Path != "/moved/sub/f" || got.NodeID != f.ID {
		t.Fatalf("after a move and a new version: %+v", got)
	}

	// Uses and downloads.
	e.clock.Advance(time.Minute)
	used := e.clock.Now()
	e.must(e.s.UseLink(e.ctx, lf.ID, used, false))
	e.must(e.s.UseLink(e.ctx, lf.ID, used.Add(-time.Hour), true))
	e.must(e.s.UseLink(e.ctx, lf.ID, used, true))
	wantKind(t, "a download past the bound", e.s.UseLink(e.ctx, lf.ID, used, true), errs.NotFound)
	e.must(e.s.UseLink(e.ctx, lf.ID, used, false))
	wantKind(t, "a use of no link", e.s.UseLink(e.ctx, lf.ID+1000, used, false), errs.NotFound)
	ls, err := e.s.UserLinks(e.ctx, a)
	e.must(err)
	if len(ls) != 2 || ls[0].ID != lf.ID || ls[1].ID != ld.ID || ls[0].Downloads != 2 || !ls[0].Last.Equal(used) ||
		ls[1].Path != "/moved" || !ls[1].Last.IsZero() {
		t.Fatalf("alice's links = %+v", ls)
	}
	if ls, err := e.s.UserLinks(e.ctx, b); err != nil || len(ls) != 0 {
		t.Fatalf("bob's links = %+v, %v", ls, err)
	}

	// A change of password, permission and expiry: by the owner only; the
	// token, the counts and the node stay.
	_, err = e.s.UpdateLink(e.ctx, b, lf.ID, meta.Link{Perm: meta.LinkRead})
	wantKind(t, "bob changing alice's link", err, errs.NotFound)
	_, err = e.s.UpdateLink(e.ctx, a, lf.ID+1000, meta.Link{Perm: meta.LinkRead})
	wantKind(t, "changing no link", err, errs.NotFound)
	up, err := e.s.UpdateLink(e.ctx, a, lf.ID, meta.Link{PassHash: "ph-new", Perm: meta.LinkUpload})
	e.must(err)
	if up.ID != lf.ID || up.PassHash != "ph-new" || up.Perm != meta.LinkUpload || !up.Expires.IsZero() ||
		up.Downloads != 2 || up.MaxDownloads != 2 || up.Path != "/moved/sub/f" || up.TokenHash != "h-f" {
		t.Fatalf("UpdateLink = %+v", up)
	}
	exp := e.clock.Now().Add(48 * time.Hour)
	up, err = e.s.UpdateLink(e.ctx, a, lf.ID, meta.Link{Perm: meta.LinkRead, Expires: exp})
	e.must(err)
	if got, err := e.s.LinkByToken(e.ctx, "h-f"); err != nil || got.PassHash != "" || got.Perm != meta.LinkRead || !got.Expires.Equal(exp) || !up.Expires.Equal(exp) {
		t.Fatalf("after a second change: %+v, %v (answered %+v)", got, err, up)
	}

	// Revocation: by the owner only.
	wantKind(t, "bob revoking alice's link", e.s.DeleteLink(e.ctx, b, ld.ID), errs.NotFound)
	e.must(e.s.DeleteLink(e.ctx, a, ld.ID))
	wantKind(t, "a revoked link", must1(e.s.LinkByToken(e.ctx, "h-d")), errs.NotFound)
	wantKind(t, "revoking twice", e.s.DeleteLink(e.ctx, a, ld.ID), errs.NotFound)

	// The trash ends the links of the subtree, and a restore does not bring
	// them back; the folder's own link ends too.
	ld2, err := add(a, d.ID, "h-d2", 0)
	e.must(err)
	e.must(e.s.Remove(e.ctx, a, "/moved"))
	wantKind(t, "a link into a trashed folder", must1(e.s.LinkByToken(e.ctx, "h-f")), errs.NotFound)
	wantKind(t, "a trashed folder's link", must1(e.s.LinkByToken(e.ctx, "h-d2")), errs.NotFound)
	items := e.trash(a)
	if len(items) != 1 {
		t.Fatalf("trash = %+v", items)
	}
	_, err = e.restore(a, items[0].ID)
	e.must(err)
	wantKind(t, "a link after a restore", must1(e.s.LinkByToken(e.ctx, "h-f")), errs.NotFound)
	if ls, _ := e.s.UserLinks(e.ctx, a); len(ls) != 0 {
		t.Fatalf("links after the trash: %+v (first %d)", ls, ld2.ID)
	}
	// A link never names a trashed node.
	g := e.commit(a, "/g", chunk("c", 5))
	e.must(e.s.Remove(e.ctx, a, "/g"))
	_, err = add(a, g.ID, "h-g", 0)
	wantKind(t, "a link to a trashed node", err, errs.NotFound)

	// The owner's deletion ends their links.
	h := e.commit(a, "/h", chunk("d", 5))
	_, err = add(a, h.ID, "h-h", 0)
	e.must(err)
	e.must(e.s.DeleteUser(e.ctx, a))
	wantKind(t, "a link of a deleted user", must1(e.s.LinkByToken(e.ctx, "h-h")), errs.NotFound)
}

func must1[T any](_ T, err error) error { return err }
