package drive

import (
	"context"
	"errors"

	"netdisk/davlock"
	"netdisk/errs"
	"netdisk/meta"
	"netdisk/vpath"
)

// Symbolic links are stored, never followed: a link is a node holding an
// opaque target (meta.Node.Target) that every surface hands back as it was
// given, and the client's kernel resolves, as on a local filesystem. No path
// the drive walks goes through a link (a link is not a folder: a path below
// one is NotDir), so a link pointing at "/etc" or "../../other-user" names
// nothing the server reads. A link is charged its target's length, like a
// file of that size, plus its entry (meta/charge.go).

// Symlink creates a symbolic link at p holding target; p's parent must
// exist. A taken name is Exists; an empty target, or one with a NUL byte, is
// Invalid; one longer than meta.MaxSymlinkTarget is TooLarge; no room in
// the quota is Quota.
func (d *Drive) Symlink(ctx context.Context, uid int64, p, target string) (meta.Node, error) {
	const op = "drive.Symlink"
	p, err := clean(op, p)
	if err != nil {
		return meta.Node{}, err
	}
	ctx, w, err := d.resolve(ctx, op, uid, p, writeAccess)
	if err != nil {
		return meta.Node{}, err
	}
	if w.m != nil {
		n, err := d.Symlink(ctx, w.uid, w.path, target)
		return w.node(n), w.err(err)
	}
	switch {
	case target == "":
		return meta.Node{}, errs.E(op, errs.Invalid, p, errors.New("a symbolic link needs a target"))
	case len(target) > meta.MaxSymlinkTarget:
		return meta.Node{}, errs.Errorf(op, errs.TooLarge, "a link target is at most %d bytes, this one is %d", meta.MaxSymlinkTarget, len(target))
	}
	if err := d.checkLocks(ctx, uid, davlock.Target{Path: p, Membership: true}); err != nil {
		return meta.Node{}, err
	}
	if err := d.room(op); err != nil {
		return meta.Node{}, err
	}
	h := d.quota.NewHold(uid)
	if err := h.Grow(ctx, int64(len(target))+meta.EntryCharge(vpath.Base(p))); err != nil {
		return meta.Node{}, err
	}
	var n meta.Node
	err = d.holdCommit(ctx, ownCommit, h, func(tx *meta.Tx) (delta int64, err error) {
		n, delta, err = d.meta.SymlinkTx(ctx, tx, uid, p, target, d.now(), h.Reserved())
		return delta, err
	})
	if err != nil {
		h.Release(ctx)
	}
	return n, d.noteFull(err)
}

// Readlink returns the target of link p. A node that is not a link is
// Invalid, as readlink(2) answers EINVAL.
func (d *Drive) Readlink(ctx context.Context, uid int64, p string) (string, error) {
	n, err := d.Stat(ctx, uid, p)
	if err != nil {
		return "", err
	}
	if !n.IsSymlink() {
		return "", errs.E("drive.Readlink", errs.Invalid, n.Path, errors.New("not a symbolic link"))
	}
	return n.Target, nil
}
