package drive

import (
	"context"
	"errors"
	"slices"
	"strings"

	"netdisk/davlock"
	"netdisk/errs"
	"netdisk/meta"
	"netdisk/vpath"
)

// Locks is the WebDAV lock table: the WebDAV adapter takes and lists locks
// in it, and every mutating operation of the drive refuses (kind Locked) a
// write to a locked resource unless the context carries one of its tokens
// (davlock.WithTokens). So a lock binds WebDAV, the JSON API and the mount.
func (d *Drive) Locks() davlock.Table { return d.locks }

// checkLocks applies the lock table to a write of uid's targets with the
// tokens ctx carries.
func (d *Drive) checkLocks(ctx context.Context, uid int64, ts ...davlock.Target) error {
	return davlock.Check(d.locks, uid, davlock.Tokens(ctx), ts...)
}

// writeTarget is what writing file p changes: p, and its parent's members
// when p is new.
func writeTarget(p string, existed bool) davlock.Target {
	return davlock.Target{Path: p, Membership: !existed}
}

// CheckWrite refuses (kind Locked) writing a new version of file p unless
// ctx carries the tokens of the locks in the way. Services beside the drive
// that commit on their own (the upload API's init and merge) call it.
func (d *Drive) CheckWrite(ctx context.Context, uid int64, p string) error {
	p, err := clean("drive.CheckWrite", p)
	if err != nil {
		return err
	}
	ctx, w, err := d.resolve(ctx, "drive.CheckWrite", uid, p, writeAccess)
	if err != nil {
		return err
	}
	if w.m != nil {
		return w.err(d.CheckWrite(ctx, w.uid, w.path))
	}
	_, err = d.meta.Stat(ctx, uid, p)
	if err != nil && !errs.Is(err, errs.NotFound) {
		return err
	}
	return d.checkLocks(ctx, uid, writeTarget(p, err == nil))
}

// LockPlace is where a path of a user's lies for the lock table: the tree
// it is in (UID) and its path there. Locks are keyed on the resource, not
// on who names it: a path inside a share is the owner's, so a lock the
// owner or any recipient takes binds them all. The user's own paths, their
// entries of shares among them when the entry itself is what changes
// (removed or moved: only their view), stay theirs.
type LockPlace struct {
	UID  int64
	Path string
	// Entry: Path is the shared node that the user's entry itself names.
	Entry bool
	m     *meta.Mount
}

// Shared reports whether the place is in another user's tree.
func (pl LockPlace) Shared() bool { return pl.m != nil }

// View maps a path of the place's tree (a lock's root) into the user's
// view. A root above the shared node (an owner's depth-infinity lock on a
// folder holding it) shows as the entry: what covers the user's paths,
// without the owner's folder names.
func (pl LockPlace) View(p string) string {
	if pl.m == nil {
		return p
	}
	if p == pl.m.TargetAt {
		return pl.m.Path
	}
	if vpath.IsBelow(p, pl.m.TargetAt) {
		return pl.m.Path + strings.TrimPrefix(p, pl.m.TargetAt)
	}
	return pl.m.Path
}

// Err maps a lock refusal met at the place into the user's view: its path
// and the root of the lock in the way.
func (pl LockPlace) Err(err error) error {
	if err == nil || pl.m == nil {
		return err
	}
	var e *errs.Error
	if !errors.As(err, &e) {
		return err
	}
	c := *e
	c.Path = pl.View(e.Path)
	var h *davlock.Held
	if errors.As(e.Err, &h) {
		c.Err = &davlock.Held{Root: pl.View(h.Root), Conflict: h.Conflict}
	}
	return &c
}

// LockPlaces maps one user's paths onto the lock table (LockPlace): their
// entries of shares read once, for every path of a request.
type LockPlaces struct {
	uid int64
	ms  []meta.Mount
}

// LockPlaces reads uid's entries of shares.
func (d *Drive) LockPlaces(ctx context.Context, uid int64) (LockPlaces, error) {
	ms, err := d.meta.Mounts(ctx, uid)
	if err != nil {
		return LockPlaces{}, err
	}
	live := ms[:0]
	for _, m := range ms {
		if m.Live() {
			live = append(live, m)
		}
	}
	return LockPlaces{uid: uid, ms: live}, nil
}

// Of is the place of the user's clean path p. A path in an entry whose
// share does not answer (in the owner's trash) names nothing: it stays the
// user's own, where no lock of anyone else's is.
func (ps LockPlaces) Of(p string) LockPlace {
	for i := range ps.ms {
		m := &ps.ms[i]
		if p == m.Path || vpath.IsBelow(p, m.Path) {
			return LockPlace{UID: m.OwnerID, Path: m.TargetAt + strings.TrimPrefix(p, m.Path), Entry: p == m.Path, m: m}
		}
	}
	return LockPlace{UID: ps.uid, Path: p}
}

// Tables lists the users whose lock tables hold locks on the user's
// paths: their own and the owners of their shares.
func (ps LockPlaces) Tables() []int64 {
	out := []int64{ps.uid}
	for _, m := range ps.ms {
		if !slices.Contains(out, m.OwnerID) {
			out = append(out, m.OwnerID)
		}
	}
	return out
}
