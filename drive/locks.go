package drive

import (
	"context"

	"netdisk/davlock"
	"netdisk/errs"
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
