package meta

import (
	"context"
	"fmt"
	"time"

	"netdisk/errs"
)

// Permission bits. The store keeps them as plain numbers for clients that
// care (the FUSE mount): the server never acts on them, setuid and setgid
// included. A stored 0 means "never set" and reads as the default (0644 for
// files, 0755 for directories), which is what every node made before modes
// were stored has; an explicit chmod 000 is therefore kept as ModeSet, a bit
// outside the permission bits, so it is not mistaken for "never set".
const (
	PermBits uint32 = 0o7777
	ModeSet  uint32 = 1 << 16

	DefaultFileMode uint32 = 0o644
	DefaultDirMode  uint32 = 0o755
)

// StoredMode is how permission bits perm (at most 0o7777) are stored.
func StoredMode(perm uint32) uint32 {
	if perm&PermBits == 0 {
		return ModeSet
	}
	return perm & PermBits
}

// Perm returns the node's permission bits, the default when none were set.
func (n Node) Perm() uint32 {
	if n.IsSymlink() {
		return 0o777 // a link's own bits mean nothing on Linux; lstat shows rwxrwxrwx
	}
	if n.Mode == 0 {
		if n.IsDir {
			return DefaultDirMode
		}
		return DefaultFileMode
	}
	return n.Mode & PermBits
}

func checkPerm(op, path string, perm uint32) error {
	if perm&^PermBits != 0 {
		return errs.E(op, errs.Invalid, path, fmt.Errorf("mode %#o has bits outside %#o", perm, PermBits))
	}
	return nil
}

// SetMode stores path's permission bits (perm ≤ 0o7777; other bits are
// Invalid).
func (s *SQLStore) SetMode(ctx context.Context, uid int64, path string, perm uint32) error {
	const op = "meta.SetMode"
	if err := checkPerm(op, path, perm); err != nil {
		return err
	}
	res, err := s.w.ExecContext(ctx, `UPDATE nodes SET mode = ? WHERE user_id = ? AND path = ?`, StoredMode(perm), uid, path)
	if err != nil {
		return wrap(op, path, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return errs.E(op, errs.NotFound, path, nil)
	}
	return nil
}

// MkdirMode is Mkdir with permission bits perm (≤ 0o7777) stored from the
// start, so a directory never shows a mode it was not created with.
func (s *SQLStore) MkdirMode(ctx context.Context, uid int64, path string, mtime time.Time, perm uint32) (Node, error) {
	const op = "meta.Mkdir"
	if err := checkPerm(op, path, perm); err != nil {
		return Node{}, err
	}
	return s.mkdir(ctx, op, uid, path, mtime, StoredMode(perm))
}
