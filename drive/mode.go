package drive

import (
	"context"
	"fmt"

	"netdisk/davlock"
	"netdisk/errs"
	"netdisk/meta"
)

// SetMode stores p's permission bits (perm ≤ 0o7777, else Invalid). They
// are kept for clients such as the FUSE mount (chmod, cp -p, tar, rsync -a);
// the server never acts on them, setuid and setgid included.
func (d *Drive) SetMode(ctx context.Context, uid int64, p string, perm uint32) error {
	ctx, w, err := d.resolvePath(ctx, "drive.SetMode", uid, p, writeAccess)
	if err != nil {
		return err
	}
	if w.m != nil {
		return w.err(d.SetMode(ctx, w.uid, w.path, perm))
	}
	return d.setAttr(ctx, "drive.SetMode", uid, p, func(p string) error { return d.meta.SetMode(ctx, uid, p, perm) })
}

// MkdirMode creates directory p with permission bits perm; its parent must
// exist. perm 0 is stored as an explicit 000 (Mkdir stores no bits).
func (d *Drive) MkdirMode(ctx context.Context, uid int64, p string, perm uint32) (meta.Node, error) {
	p, err := clean("drive.Mkdir", p)
	if err != nil {
		return meta.Node{}, err
	}
	ctx, w, err := d.resolve(ctx, "drive.Mkdir", uid, p, writeAccess)
	if err != nil {
		return meta.Node{}, err
	}
	if w.m != nil {
		n, err := d.MkdirMode(ctx, w.uid, w.path, perm)
		return w.node(n), w.err(err)
	}
	if err := d.checkLocks(ctx, uid, davlock.Target{Path: p, Membership: true}); err != nil {
		return meta.Node{}, err
	}
	if perm&^meta.PermBits != 0 {
		return meta.Node{}, errs.E("drive.Mkdir", errs.Invalid, p, fmt.Errorf("mode %#o has bits outside %#o", perm, meta.PermBits))
	}
	return d.mkdirCharged(ctx, "drive.Mkdir", uid, p, meta.StoredMode(perm))
}
