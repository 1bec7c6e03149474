package drive

import (
	"context"
	"errors"
	"strings"
	"time"

	"netdisk/davlock"
	"netdisk/errs"
	"netdisk/meta"
	"netdisk/vpath"
)

// Shares between users. A share is (owner, node, recipient user or group,
// write flag): the node is named by id, so the share follows it across the
// owner's moves, stops answering while it is in the owner's trash and dies
// when it is expunged. Each recipient has an entry of it in their own tree
// (a folder row of theirs, meta.Mount), put in their root under the node's
// name, or a free variant of it; they may rename and move the entry like
// any of theirs, which changes only their view, and removing it leaves the
// share.
//
// Authorization is decided here, once, for every surface: every method
// that takes a user and a path resolves the path through the user's tree
// (resolve). When the path is an entry or below one, the operation runs in
// the owner's tree at the shared node, with the share's permission: a
// write through a read-only share is errs.ReadOnly (403, EROFS). Nothing
// above the shared node is reachable: the path below the entry is cleaned
// (vpath.Clean refuses "..") and appended to the node's own path. What
// comes back is mapped into the asker's view (their entry's path), errors
// included, so the owner's folder names never show.
//
// Writes through a writable share are the owner's: the owner's quota, the
// owner's trash and versions, and the lock table keyed on the owner's
// resource (checkLocks with the owner's id and path), so both users
// contend for one lock. A copy between two trees (into or out of a share,
// or between two owners' shares) takes the chunk references, never the
// bytes, charged to the destination's owner; a move is that copy and a
// delete of the source into its owner's trash (moveAcross). What cannot
// change trees (a share's entry, a folder holding one) is errs.CrossTree:
// WebDAV answers 502 and the mount EXDEV.
//
// Shares do not chain: the resolution happens once per operation (the
// context says it was done), so an entry the owner has inside a shared
// folder (a share of a third user's) shows to the recipient as the empty
// folder it is in the owner's tree, never as the third user's files.

// resolvedKey marks a context whose paths were resolved already: the
// drive's methods calling each other must not resolve an owner's path
// through the owner's own entries.
type resolvedKey struct{}

// where is a path resolved: the tree it lies in and the path there.
type where struct {
	uid  int64  // whose tree
	path string // the path in it
	m    *meta.Mount
	// entry is set when the path names the asker's entry itself (not a
	// path below it): Remove and Move act on the entry, not the share.
	entry bool
	// mounts are the asker's live entries (for listings of their tree).
	mounts []meta.Mount
	// link is set when the view is a public link's (linkscope.go): m is
	// its root, at "/".
	link bool
}

type access int

const (
	readAccess access = iota
	writeAccess
)

// resolve resolves clean path p of user uid (see above). ctx comes back
// marked: calls made with it do not resolve again.
func (d *Drive) resolve(ctx context.Context, op string, uid int64, p string, a access) (context.Context, where, error) {
	if ctx.Value(resolvedKey{}) != nil {
		return ctx, where{uid: uid, path: p}, nil
	}
	if s, ok := ctx.Value(linkKey{}).(*linkScope); ok {
		return d.resolveLink(ctx, op, s, uid, p, a)
	}
	ctx = context.WithValue(ctx, resolvedKey{}, true)
	ms, err := d.meta.Mounts(ctx, uid)
	if err != nil {
		return ctx, where{}, err
	}
	w := where{uid: uid, path: p}
	dead := false
	for i := range ms {
		m := ms[i]
		if m.ShareID == 0 {
			dead = true
			continue
		}
		if !strings.HasPrefix(m.Path, "/") {
			continue // in the asker's trash
		}
		w.mounts = append(w.mounts, m)
		if p != m.Path && !vpath.IsBelow(p, m.Path) {
			continue
		}
		if !m.Live() {
			// The shared node is in the owner's trash: nothing is there.
			return ctx, where{}, errs.E(op, errs.NotFound, p, nil)
		}
		w = where{uid: m.OwnerID, path: rebase(p, m.Path, m.TargetAt), m: &m, entry: p == m.Path}
		if a == writeAccess && !m.Write {
			return ctx, where{}, errs.E(op, errs.ReadOnly, p, errors.New("the share is read-only"))
		}
	}
	if dead {
		d.pruneDead(ctx, uid, ms)
	}
	return ctx, w, nil
}

// pruneDead removes uid's entries whose share is gone. A failure is only
// logged: the entries stay hidden, and the next resolution tries again.
func (d *Drive) pruneDead(ctx context.Context, uid int64, ms []meta.Mount) {
	for _, m := range ms {
		if m.ShareID != 0 {
			continue
		}
		err := d.measuredChange(context.WithoutCancel(ctx), uid, func(tx *meta.Tx) (int64, error) {
			return d.meta.UnmountTx(ctx, tx, uid, m.NodeID)
		})
		if err != nil && !errs.Is(err, errs.NotFound) {
			d.log.Warn("drive: removing the entry of a share that is gone", "user", uid, "err", err)
		}
	}
}

// view maps a path of the tree w resolved into into the asker's view.
func (w where) view(p string) string {
	if w.m == nil {
		return p
	}
	if p == w.m.TargetAt || vpath.IsBelow(p, w.m.TargetAt) {
		return rebase(p, w.m.TargetAt, w.m.Path)
	}
	return p
}

// node maps n into the asker's view.
func (w where) node(n meta.Node) meta.Node {
	n.Path = w.view(n.Path)
	return n
}

// nodes maps ns into the asker's view.
func (w where) nodes(ns []meta.Node) []meta.Node {
	if w.m == nil {
		return ns
	}
	for i := range ns {
		ns[i].Path = w.view(ns[i].Path)
	}
	return ns
}

// err maps the path an error names into the asker's view.
func (w where) err(err error) error {
	if err == nil || w.m == nil {
		return err
	}
	var h *davlock.Held
	if errs.Is(err, errs.Locked) && errors.As(err, &h) {
		// The lock in the way, named as the asker sees it.
		return LockPlace{m: w.m}.Err(err)
	}
	var e *errs.Error
	if errors.As(err, &e) && e.Path != "" {
		c := *e
		c.Path = w.view(e.Path)
		return &c
	}
	return err
}

// withEntries replaces the asker's entries among ns (nodes of their own
// tree) by the shared nodes they stand for, at the entry's path. An entry
// whose node is gone is left out.
func (d *Drive) withEntries(ctx context.Context, w where, ns []meta.Node) []meta.Node {
	if w.m != nil || len(w.mounts) == 0 {
		return ns
	}
	byID := make(map[int64]meta.Mount, len(w.mounts))
	for _, m := range w.mounts {
		byID[m.NodeID] = m
	}
	out := ns[:0]
	for _, n := range ns {
		m, ok := byID[n.ID]
		if !ok {
			out = append(out, n)
			continue
		}
		if !m.Live() {
			continue
		}
		t, err := d.meta.NodeByID(ctx, m.OwnerID, m.Target)
		if err != nil {
			continue // gone meanwhile
		}
		t.Path = n.Path
		out = append(out, t)
	}
	return out
}

// ---- managing shares

// ShareWithUser shares owner's node at p with the user named to: the node
// appears in their root. write allows them to change it.
func (d *Drive) ShareWithUser(ctx context.Context, owner int64, p, to string, write bool) (meta.Share, error) {
	u, err := d.meta.UserByName(ctx, to)
	if err != nil {
		return meta.Share{}, err
	}
	return d.share(ctx, owner, p, meta.Share{ToUser: u.ID, Write: write}, []int64{u.ID})
}

// ShareWithGroup shares owner's node at p with every member of group g,
// now and later (a member added later gets it; one removed loses it).
func (d *Drive) ShareWithGroup(ctx context.Context, owner int64, p, g string, write bool) (meta.Share, error) {
	grp, err := d.meta.GroupByName(ctx, g)
	if err != nil {
		return meta.Share{}, err
	}
	var uids []int64
	for _, name := range grp.Members {
		u, err := d.meta.UserByName(ctx, name)
		if err != nil {
			continue // deleted meanwhile
		}
		if u.ID != owner {
			uids = append(uids, u.ID)
		}
	}
	return d.share(ctx, owner, p, meta.Share{ToGroup: grp.ID, Write: write}, uids)
}

// ownerOnly resolves user uid's clean path p for what only its owner may do
// with it (share it with users, make a link to it): Permission when p is,
// or lies inside, a share uid received.
func (d *Drive) ownerOnly(ctx context.Context, op string, uid int64, p string) (where, error) {
	_, w, err := d.resolve(ctx, op, uid, p, readAccess)
	if err != nil {
		return where{}, err
	}
	if w.m != nil {
		return where{}, errs.E(op, errs.Permission, p, errors.New("only the owner shares a file or folder"))
	}
	return w, nil
}

func (d *Drive) share(ctx context.Context, owner int64, p string, s meta.Share, to []int64) (meta.Share, error) {
	const op = "drive.Share"
	p, err := clean(op, p)
	if err != nil {
		return meta.Share{}, err
	}
	if p == "/" {
		return meta.Share{}, errs.E(op, errs.Invalid, p, errors.New("share a folder or a file, not the whole drive"))
	}
	w, err := d.ownerOnly(ctx, op, owner, p)
	if err != nil {
		return meta.Share{}, err
	}
	for _, m := range w.mounts {
		if m.Path == p || vpath.IsBelow(m.Path, p) {
			// An entry inside would hand a third user's share on.
			return meta.Share{}, errs.E(op, errs.Permission, p, errors.New("it holds a share of someone else's"))
		}
	}
	n, err := d.meta.Stat(ctx, owner, p)
	if err != nil {
		return meta.Share{}, err
	}
	s.OwnerID, s.NodeID, s.Created = owner, n.ID, d.now()
	err = d.measuredChange(ctx, owner, func(tx *meta.Tx) (int64, error) {
		s.ID, err = d.meta.CreateShareTx(ctx, tx, s)
		return 0, err
	})
	if err != nil {
		return meta.Share{}, err
	}
	for _, uid := range to {
		if err := d.mount(ctx, s.ID, uid, vpath.Base(p)); err != nil {
			return meta.Share{}, err
		}
	}
	return d.meta.ShareByID(ctx, owner, s.ID)
}

// mount gives uid their entry of share id.
func (d *Drive) mount(ctx context.Context, id, uid int64, name string) error {
	return d.measuredChange(ctx, uid, func(tx *meta.Tx) (int64, error) {
		_, delta, err := d.meta.MountShareTx(ctx, tx, id, uid, name, d.now())
		return delta, err
	})
}

// Unshare revokes owner's share id: every recipient's entry goes at once.
func (d *Drive) Unshare(ctx context.Context, owner, id int64) error {
	defer d.quota.Step()()
	var deltas map[int64]int64
	err := d.meta.Tx(ctx, func(tx *meta.Tx) (err error) {
		deltas, err = d.meta.DeleteShareTx(ctx, tx, owner, id)
		return err
	})
	if err != nil {
		return err
	}
	for uid, delta := range deltas {
		d.quota.Changed(context.WithoutCancel(ctx), uid, delta)
	}
	return nil
}

// SetShareWrite changes whether owner's share id allows writes.
func (d *Drive) SetShareWrite(ctx context.Context, owner, id int64, write bool) error {
	return d.meta.SetShareWrite(ctx, owner, id, write)
}

// Shares lists what owner shared.
func (d *Drive) Shares(ctx context.Context, owner int64) ([]meta.Share, error) {
	return d.meta.SharesOf(ctx, owner)
}

// SharedWithMe lists uid's live entries: what others share with them.
func (d *Drive) SharedWithMe(ctx context.Context, uid int64) ([]meta.Mount, error) {
	ms, err := d.meta.Mounts(ctx, uid)
	if err != nil {
		return nil, err
	}
	out := ms[:0]
	for _, m := range ms {
		if m.Live() {
			out = append(out, m)
		}
	}
	return out, nil
}

// LeaveShare removes uid's entry at p: the share no longer shows in their
// tree. A user share ends with it; a group share stays for the others.
func (d *Drive) LeaveShare(ctx context.Context, uid int64, p string) error {
	const op = "drive.LeaveShare"
	p, err := clean(op, p)
	if err != nil {
		return err
	}
	ctx, w, err := d.resolve(ctx, op, uid, p, readAccess)
	if err != nil {
		return err
	}
	if !w.entry {
		return errs.E(op, errs.Invalid, p, errors.New("not a share's entry"))
	}
	return d.leave(ctx, uid, *w.m)
}

func (d *Drive) leave(ctx context.Context, uid int64, m meta.Mount) error {
	if !m.Group {
		// Shared with them alone: leaving ends the share, so the owner
		// may share it again.
		return d.Unshare(ctx, m.OwnerID, m.ShareID)
	}
	return d.measuredChange(ctx, uid, func(tx *meta.Tx) (int64, error) {
		return d.meta.UnmountTx(ctx, tx, uid, m.NodeID)
	})
}

// ---- groups

// AddGroup creates a group.
func (d *Drive) AddGroup(ctx context.Context, name string) (meta.Group, error) {
	if err := ValidUserName(name); err != nil {
		return meta.Group{}, errs.Errorf("drive.AddGroup", errs.Invalid, "group name %q: 1 to 64 letters, digits and - _ . @", name)
	}
	return d.meta.CreateGroup(ctx, name, d.now())
}

// RemoveGroup deletes a group; its shares end.
func (d *Drive) RemoveGroup(ctx context.Context, name string) error {
	return d.meta.DeleteGroup(ctx, name)
}

// Groups lists the groups with their members.
func (d *Drive) Groups(ctx context.Context) ([]meta.Group, error) { return d.meta.Groups(ctx) }

// AddGroupMember adds user to group g: the group's shares appear in their
// root.
func (d *Drive) AddGroupMember(ctx context.Context, g, user string) error {
	grp, err := d.meta.GroupByName(ctx, g)
	if err != nil {
		return err
	}
	u, err := d.meta.UserByName(ctx, user)
	if err != nil {
		return err
	}
	var shared []meta.Share
	err = d.measuredChange(ctx, u.ID, func(tx *meta.Tx) (int64, error) {
		shared, err = d.meta.AddGroupMemberTx(ctx, tx, grp.ID, u.ID)
		return 0, err
	})
	if err != nil {
		return err
	}
	ms, err := d.meta.Mounts(ctx, u.ID)
	if err != nil {
		return err
	}
	has := map[int64]bool{}
	for _, m := range ms {
		has[m.ShareID] = true
	}
	for _, s := range shared {
		if has[s.ID] {
			continue // a member again: their entry is there
		}
		if s.Path == "" {
			// In the owner's trash: nothing to show, and no name to give
			// an entry; the member gets none for this share.
			continue
		}
		if err := d.mount(ctx, s.ID, u.ID, vpath.Base(s.Path)); err != nil {
			return err
		}
	}
	return nil
}

// RemoveGroupMember removes user from group g with their entries of the
// group's shares, in one transaction: their next request is refused.
func (d *Drive) RemoveGroupMember(ctx context.Context, g, user string) error {
	grp, err := d.meta.GroupByName(ctx, g)
	if err != nil {
		return err
	}
	u, err := d.meta.UserByName(ctx, user)
	if err != nil {
		return err
	}
	return d.measuredChange(ctx, u.ID, func(tx *meta.Tx) (int64, error) {
		return d.meta.RemoveGroupMemberTx(ctx, tx, grp.ID, u.ID)
	})
}

// resolvePath is resolve of a path not cleaned yet.
func (d *Drive) resolvePath(ctx context.Context, op string, uid int64, p string, a access) (context.Context, where, error) {
	c, err := clean(op, p)
	if err != nil {
		return ctx, where{}, err
	}
	return d.resolve(ctx, op, uid, c, a)
}

// writable refuses a write through a read-only share.
func (w where) writable(op, p string) error {
	if w.m != nil && !w.m.Write {
		return errs.E(op, errs.ReadOnly, p, errors.New("the share is read-only"))
	}
	return nil
}

// copyAcross copies ws's node into wd's place, in another user's tree:
// files take the source's chunk references (no bytes copied), charged to
// wd's owner; a folder (with recursive) is made again with its contents.
func (d *Drive) copyAcross(ctx context.Context, ws, wd where, overwrite, recursive bool) error {
	const op = "drive.Copy"
	if err := wd.writable(op, wd.view(wd.path)); err != nil {
		return err
	}
	src, err := d.meta.Stat(ctx, ws.uid, ws.path)
	if err != nil {
		return ws.err(err)
	}
	if old, err := d.meta.Stat(ctx, wd.uid, wd.path); err == nil {
		if !overwrite {
			return errs.E(op, errs.Exists, wd.path, nil)
		}
		if old.IsDir || src.IsDir || old.IsSymlink() {
			if err := d.Remove(ctx, wd.uid, wd.path); err != nil {
				return err
			}
		}
	} else if !errs.Is(err, errs.NotFound) {
		return err
	}
	nodes := []meta.Node{src}
	if src.IsDir && recursive {
		const limit = 1_000_000
		below, err := d.meta.Tree(ctx, ws.uid, ws.path, limit)
		if err != nil {
			return ws.err(err)
		}
		if len(below) > limit {
			return errs.E(op, errs.TooLarge, wd.path, errors.New("too many entries to copy between trees at once"))
		}
		nodes = append(nodes, below...)
	}
	for _, n := range nodes {
		p := wd.path + strings.TrimPrefix(n.Path, src.Path)
		switch {
		case n.IsDir:
			if _, err := d.Mkdir(ctx, wd.uid, p); err != nil && !errs.Is(err, errs.Exists) {
				return err
			}
		case n.IsSymlink():
			if _, err := d.Symlink(ctx, wd.uid, p, n.Target); err != nil {
				return err
			}
		default:
			fcs, err := d.meta.FileChunks(ctx, n.ID)
			if err != nil {
				return err
			}
			_, ok, err := d.commitContent(ctx, op, wd.uid, p, fcs, n.FileHash, n.Size, n.ModTime)
			if err != nil {
				return err
			}
			if !ok {
				return errs.E(op, errs.Conflict, p, errors.New("the source changed during the copy"))
			}
		}
	}
	return nil
}

// commitSessionAcross ends uid's upload session id whose path lies in a
// share: the content goes into the owner's tree, charged to the owner (the
// chunk references, as a copy), and the session is dropped, which gives
// uid's reservation back.
func (d *Drive) commitSessionAcross(ctx context.Context, w where, uid int64, id string, f meta.NewFile, now time.Time) (meta.Node, error) {
	const op = "drive.CommitSession"
	if _, err := d.meta.Session(ctx, uid, id); err != nil {
		return meta.Node{}, err
	}
	if parent := vpath.Parent(w.path); parent != w.m.TargetAt && parent != "/" {
		if err := d.MkdirAll(ctx, w.uid, parent); err != nil {
			return meta.Node{}, w.err(err)
		}
	}
	fcs := make([]meta.FileChunk, len(f.Chunks))
	var off int64
	for i, c := range f.Chunks {
		fcs[i] = meta.FileChunk{Index: int64(i), Offset: off, Chunk: c}
		off += c.Size
	}
	n, ok, err := d.commitContent(ctx, op, w.uid, w.path, fcs, f.FileHash, f.Size, f.ModTime)
	if err != nil {
		return meta.Node{}, w.err(err)
	}
	if !ok {
		return meta.Node{}, errs.E(op, errs.NotFound, w.view(w.path), meta.ErrChunkGone)
	}
	if _, err := d.DropSession(context.WithoutCancel(ctx), id, now); err != nil {
		d.log.Warn("drive: dropping an upload session merged into a share", "session", id, "err", err)
	}
	return w.node(n), nil
}

// ChangeShare sets the write flag of owner's share of p with the user (or
// the group) named.
func (d *Drive) ChangeShare(ctx context.Context, owner int64, p, user, group string, write bool) (meta.Share, error) {
	const op = "drive.ChangeShare"
	p, err := clean(op, p)
	if err != nil {
		return meta.Share{}, err
	}
	ss, err := d.meta.SharesOf(ctx, owner)
	if err != nil {
		return meta.Share{}, err
	}
	for _, s := range ss {
		if s.Path != p || (user != "" && (s.ToUser == 0 || !strings.EqualFold(s.ToName, user))) || (group != "" && (s.ToGroup == 0 || !strings.EqualFold(s.ToName, group))) {
			continue
		}
		if err := d.meta.SetShareWrite(ctx, owner, s.ID, write); err != nil {
			return meta.Share{}, err
		}
		s.Write = write
		return s, nil
	}
	return meta.Share{}, errs.E(op, errs.NotFound, p, errors.New("no such share"))
}

// Resource names the node at uid's path p in the tree it lies in, for
// resources keyed on a path (the lock service's "path:"): through a share
// it is the owner's id and path, so the owner and every recipient contend
// for one key.
func (d *Drive) Resource(ctx context.Context, uid int64, p string) (owner int64, path string, err error) {
	_, w, err := d.resolvePath(ctx, "drive.Resource", uid, p, readAccess)
	if err != nil {
		return 0, "", err
	}
	return w.uid, w.path, nil
}

// NodeByIDInView returns the node id as user uid sees it: one of their
// own, or one inside a share made with them (shown at their entry's path,
// as their listings show it: its id is the owner's node id). Any other id
// is NotFound, as an unknown one is: ids are guessable.
func (d *Drive) NodeByIDInView(ctx context.Context, uid, id int64) (meta.Node, error) {
	n, err := d.meta.NodeByID(ctx, uid, id)
	if !errs.Is(err, errs.NotFound) {
		return n, err
	}
	ms, merr := d.SharedWithMe(ctx, uid)
	if merr != nil {
		return meta.Node{}, merr
	}
	for _, m := range ms {
		on, oerr := d.meta.NodeByID(ctx, m.OwnerID, id)
		if oerr != nil {
			continue
		}
		if on.Path == m.TargetAt || vpath.IsBelow(on.Path, m.TargetAt) {
			on.Path = m.Path + strings.TrimPrefix(on.Path, m.TargetAt)
			return on, nil
		}
	}
	return meta.Node{}, err
}

// moveAcross moves ws's node to wd's place in another user's tree: a copy
// that takes the chunk references (copyAcross: no byte is read or written,
// the destination's owner is charged), then a delete of the source into
// its owner's trash, as Remove does. Everything that can refuse is asked
// before anything changes: the locks on both sides and the destination
// owner's quota for the whole subtree, so a move that does not fit (507,
// EDQUOT on the mount) leaves both trees as they were. Only a write racing the move
// between that check and the copy of a folder can still fill the quota
// midway, or a lock taken on the source meanwhile refuse its delete; what
// was copied then goes to the destination owner's trash and the source
// stays.
func (d *Drive) moveAcross(ctx context.Context, ws, wd where, overwrite bool) error {
	const op = "drive.Move"
	for _, m := range ws.mounts {
		if m.Path == ws.path || vpath.IsBelow(m.Path, ws.path) {
			// Copied, the entry would be an empty folder and the share
			// would be left: a third user's share does not change hands.
			return errs.E(op, errs.CrossTree, ws.path, errors.New("it holds a share of someone else's"))
		}
	}
	if err := d.checkLocks(ctx, ws.uid, davlock.Target{Path: ws.path, Deep: true, Membership: true}); err != nil {
		return ws.err(err)
	}
	if err := d.checkLocks(ctx, wd.uid, davlock.Target{Path: wd.path, Deep: true, Membership: true}); err != nil {
		return wd.err(err)
	}
	_, err := d.meta.Stat(ctx, wd.uid, wd.path)
	existed := err == nil
	switch {
	case existed && !overwrite:
		return errs.E(op, errs.Exists, wd.view(wd.path), nil)
	case err != nil && !errs.Is(err, errs.NotFound):
		return wd.err(err)
	}
	need, err := d.meta.SubtreeSize(ctx, ws.uid, ws.path)
	if err != nil {
		return ws.err(err)
	}
	need += int64(len(vpath.Base(wd.path)) - len(vpath.Base(ws.path)))
	if err := d.room(op); err != nil {
		return err
	}
	h := d.quota.NewHold(wd.uid)
	err = h.Grow(ctx, need)
	// The copy reserves what each piece takes on its own: this hold only
	// asked whether the whole fits.
	h.Release(context.WithoutCancel(ctx))
	if err != nil {
		return wd.err(d.noteFull(err))
	}
	undo := func() {
		if existed {
			return // overwritten: the old destination is in its versions or trash
		}
		if err := d.Remove(context.WithoutCancel(ctx), wd.uid, wd.path); err != nil && !errs.Is(err, errs.NotFound) {
			d.log.Warn("drive: removing the copy of a move between trees that failed", "user", wd.uid, "err", err)
		}
	}
	if err := d.copyAcross(ctx, ws, wd, overwrite, true); err != nil {
		undo()
		return wd.err(d.noteFull(err))
	}
	if err := d.Remove(ctx, ws.uid, ws.path); err != nil {
		// A lock taken on the source meanwhile: the source stays whole,
		// so the copy goes rather than leaving the content in both places.
		undo()
		return ws.err(err)
	}
	return nil
}
