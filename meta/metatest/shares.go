package metatest

import (
	"testing"

	"netdisk/errs"
	"netdisk/meta"
)

func (e *env) tx(fn func(tx *meta.Tx) error) error { return e.s.Tx(e.ctx, fn) }

func (e *env) mounts(uid int64) []meta.Mount {
	e.t.Helper()
	ms, err := e.s.Mounts(e.ctx, uid)
	e.must(err)
	return ms
}

// Shares: recorded once per node and recipient, never with oneself, only
// of one's own live node; a recipient's entry is a folder row of theirs
// under a free name, charged, and follows the owner's moves of the node
// (by id); the write flag changes; a revoke takes every entry with it and
// gives the charge back; an entry of a node in the owner's trash does not
// answer (Live), one whose node is expunged names no share.
func testShares(t *testing.T, e *env) {
	a, b := e.user("alice", 0), e.user("bob", 0)
	e.mkdir(a, "/docs")
	e.commit(a, "/docs/f", chunk("f", 3))
	e.mkdir(b, "/docs") // bob's own folder takes the name
	docs := e.stat(a, "/docs")

	share := func(s meta.Share) (id int64, err error) {
		err = e.tx(func(tx *meta.Tx) (err error) {
			id, err = e.s.CreateShareTx(e.ctx, tx, s)
			return err
		})
		return id, err
	}
	id, err := share(meta.Share{OwnerID: a, NodeID: docs.ID, ToUser: b, Created: e.clock.Now()})
	e.must(err)
	_, err = share(meta.Share{OwnerID: a, NodeID: docs.ID, ToUser: b, Created: e.clock.Now()})
	wantKind(t, "the same share again", err, errs.Exists)
	_, err = share(meta.Share{OwnerID: a, NodeID: docs.ID, ToUser: a, Created: e.clock.Now()})
	wantKind(t, "a share with oneself", err, errs.Invalid)
	_, err = share(meta.Share{OwnerID: b, NodeID: docs.ID, ToUser: a, Created: e.clock.Now()})
	wantKind(t, "a share of someone else's node", err, errs.NotFound)

	before := e.metaCharge(b)
	var m meta.Mount
	var delta int64
	e.must(e.tx(func(tx *meta.Tx) (err error) {
		m, delta, err = e.s.MountShareTx(e.ctx, tx, id, b, "docs", e.clock.Now())
		return err
	}))
	if m.Path != "/docs (2)" || m.ShareID != id || m.OwnerID != a || m.OwnerName != "alice" || m.TargetAt != "/docs" || !m.TargetDir || m.Write || !m.Live() {
		t.Fatalf("entry = %+v", m)
	}
	if delta != meta.EntryCharge("docs (2)") || e.metaCharge(b) != before+delta {
		t.Fatalf("entry charged %d (charge %d → %d)", delta, before, e.metaCharge(b))
	}
	if n := e.stat(b, "/docs (2)"); !n.IsDir || n.ID != m.NodeID {
		t.Fatalf("entry row %+v", n)
	}

	// The owner's move is followed; the recipient's rename too.
	e.must(e.s.Move(e.ctx, a, "/docs", "/papers", false))
	e.must(e.s.Move(e.ctx, b, "/docs (2)", "/from-alice", false))
	ms := e.mounts(b)
	if len(ms) != 1 || ms[0].TargetAt != "/papers" || ms[0].Path != "/from-alice" {
		t.Fatalf("after the moves: %+v", ms)
	}
	e.must(e.s.SetShareWrite(e.ctx, a, id, true))
	wantKind(t, "another owner's share", e.s.SetShareWrite(e.ctx, b, id, true), errs.NotFound)
	if ms := e.mounts(b); !ms[0].Write {
		t.Fatalf("write flag not set: %+v", ms)
	}
	sh, err := e.s.ShareByID(e.ctx, a, id)
	e.must(err)
	if sh.Path != "/papers" || sh.ToName != "bob" || sh.OwnerName != "alice" || !sh.Write {
		t.Fatalf("share = %+v", sh)
	}
	if ss, err := e.s.SharesOf(e.ctx, a); err != nil || len(ss) != 1 || ss[0].ID != id {
		t.Fatalf("SharesOf = %+v, %v", ss, err)
	}

	// In the owner's trash the entry does not answer; restored it does.
	e.must(e.s.Remove(e.ctx, a, "/papers"))
	if ms := e.mounts(b); ms[0].Live() || ms[0].ShareID != id {
		t.Fatalf("node in the trash: %+v", ms)
	}
	// Revoked: the entry goes, with its charge.
	var deltas map[int64]int64
	e.must(e.tx(func(tx *meta.Tx) (err error) {
		deltas, err = e.s.DeleteShareTx(e.ctx, tx, a, id)
		return err
	}))
	if deltas[b] != -meta.EntryCharge("from-alice") || e.metaCharge(b) != before || len(e.mounts(b)) != 0 {
		t.Fatalf("after the revoke: deltas %v charge %d (was %d), mounts %+v", deltas, e.metaCharge(b), before, e.mounts(b))
	}
	if _, err := e.s.Stat(e.ctx, b, "/from-alice"); !errs.Is(err, errs.NotFound) {
		t.Fatalf("entry row after the revoke: %v", err)
	}

	// Expunged with its node: the entry stays, naming no share, for the
	// drive to remove.
	e.mkdir(a, "/x")
	id, err = share(meta.Share{OwnerID: a, NodeID: e.stat(a, "/x").ID, ToUser: b, Created: e.clock.Now()})
	e.must(err)
	e.must(e.tx(func(tx *meta.Tx) error {
		_, _, err := e.s.MountShareTx(e.ctx, tx, id, b, "x", e.clock.Now())
		return err
	}))
	e.must(e.s.Remove(e.ctx, a, "/x"))
	_, err = e.s.EmptyTrash(e.ctx, a)
	e.must(err)
	ms = e.mounts(b)
	if len(ms) != 1 || ms[0].ShareID != 0 || ms[0].Live() {
		t.Fatalf("after the expunge: %+v", ms)
	}
	var back int64
	e.must(e.tx(func(tx *meta.Tx) (err error) {
		back, err = e.s.UnmountTx(e.ctx, tx, b, ms[0].NodeID)
		return err
	}))
	if back != -meta.EntryCharge("x") || len(e.mounts(b)) != 0 {
		t.Fatalf("unmount gave back %d, mounts %+v", back, e.mounts(b))
	}
}

// Groups: names unique ignoring case; members added once; a member sees
// the group's shares (AddGroupMemberTx names them); removing a member
// removes their entries of the group's shares in the same transaction.
func testGroups(t *testing.T, e *env) {
	a, b, c := e.user("alice", 0), e.user("bob", 0), e.user("carol", 0)
	g, err := e.s.CreateGroup(e.ctx, "team", e.clock.Now())
	e.must(err)
	_, err = e.s.CreateGroup(e.ctx, "TEAM", e.clock.Now())
	wantKind(t, "a group name taken", err, errs.Exists)
	add := func(uid int64) []meta.Share {
		var ss []meta.Share
		e.must(e.tx(func(tx *meta.Tx) (err error) {
			ss, err = e.s.AddGroupMemberTx(e.ctx, tx, g.ID, uid)
			return err
		}))
		return ss
	}
	if ss := add(b); len(ss) != 0 {
		t.Fatalf("shares of a new group: %+v", ss)
	}
	add(b)
	e.mkdir(a, "/team")
	var id int64
	e.must(e.tx(func(tx *meta.Tx) (err error) {
		id, err = e.s.CreateShareTx(e.ctx, tx, meta.Share{OwnerID: a, NodeID: e.stat(a, "/team").ID, ToGroup: g.ID, Write: true, Created: e.clock.Now()})
		return err
	}))
	ss := add(c)
	if len(ss) != 1 || ss[0].ID != id || ss[0].Path != "/team" {
		t.Fatalf("the group's shares for a new member: %+v", ss)
	}
	for _, uid := range []int64{b, c} {
		e.must(e.tx(func(tx *meta.Tx) error {
			_, _, err := e.s.MountShareTx(e.ctx, tx, id, uid, "team", e.clock.Now())
			return err
		}))
	}
	got, err := e.s.GroupByName(e.ctx, "Team")
	e.must(err)
	if got.ID != g.ID || !same(got.Members, []string{"bob", "carol"}) {
		t.Fatalf("group = %+v", got)
	}
	before := e.metaCharge(b)
	var delta int64
	e.must(e.tx(func(tx *meta.Tx) (err error) {
		delta, err = e.s.RemoveGroupMemberTx(e.ctx, tx, g.ID, b)
		return err
	}))
	if len(e.mounts(b)) != 0 || len(e.mounts(c)) != 1 || delta != -meta.EntryCharge("team") || e.metaCharge(b) != before+delta {
		t.Fatalf("after removing bob: bob %+v, carol %+v, delta %d", e.mounts(b), e.mounts(c), delta)
	}
	err = e.tx(func(tx *meta.Tx) error {
		_, err := e.s.RemoveGroupMemberTx(e.ctx, tx, g.ID, b)
		return err
	})
	wantKind(t, "removing a non-member", err, errs.NotFound)
	gs, err := e.s.Groups(e.ctx)
	e.must(err)
	if len(gs) != 1 || !same(gs[0].Members, []string{"carol"}) {
		t.Fatalf("Groups = %+v", gs)
	}
	// A deleted group ends its shares: carol's entry names none.
	e.must(e.s.DeleteGroup(e.ctx, "team"))
	wantKind(t, "deleting it again", e.s.DeleteGroup(e.ctx, "team"), errs.NotFound)
	if ms := e.mounts(c); len(ms) != 1 || ms[0].ShareID != 0 {
		t.Fatalf("carol's entry after the group's deletion: %+v", ms)
	}
}
