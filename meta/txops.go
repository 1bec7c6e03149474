package meta

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"netdisk/errs"
)

// Tree changes inside a caller's transaction, for the quota wiring (package
// quota): the caller combines the change with its own writes (an
// upload session closing, the ledger's Settle) in one commit, and learns by
// how much the change moved what the user is charged (finished bytes and the
// metadata charge of entries and properties, charge.go: finishedTx), so the
// ledger can be told exactly that. maxGrowth bounds that move: a change that
// would grow it by more is refused with errs.Quota inside the
// transaction (the caller reserved maxGrowth in the ledger; the tree may have
// changed since it looked). maxGrowth < 0 means no bound beyond the quota
// check every commit makes.

// NoGrowthLimit is the maxGrowth of a change the caller does not bound.
const NoGrowthLimit = -1

// finishedTx returns what the user is charged as tx sees it: their finished
// bytes and their metadata charge (charge.go), the two figures the quota
// ledger counts as one.
func finishedTx(ctx context.Context, tx *sql.Tx, uid int64) (int64, error) {
	var n int64
	err := tx.QueryRowContext(ctx, `SELECT use_space_finished + use_space_meta FROM users WHERE id = ?`, uid).Scan(&n)
	return n, err
}

// measured runs change and returns how it moved the user's finished bytes,
// refusing growth beyond maxGrowth.
func measured(ctx context.Context, tx *sql.Tx, op string, uid int64, path string, maxGrowth int64, change func() error) (int64, error) {
	before, err := finishedTx(ctx, tx, uid)
	if err != nil {
		return 0, wrap(op, path, err)
	}
	if err := change(); err != nil {
		return 0, wrap(op, path, err)
	}
	after, err := finishedTx(ctx, tx, uid)
	if err != nil {
		return 0, wrap(op, path, err)
	}
	delta := after - before
	if maxGrowth >= 0 && delta > maxGrowth {
		return 0, errs.E(op, errs.Quota, path, fmt.Errorf("quota exceeded: the change needs %d bytes, %d were reserved (the tree changed meanwhile)", delta, maxGrowth))
	}
	return delta, nil
}

// CommitFileTx is CommitFile inside tx; it returns the node and the change of
// the user's finished bytes.
func (s *SQLStore) CommitFileTx(ctx context.Context, tx *Tx, uid int64, path string, f NewFile, maxGrowth int64) (Node, int64, error) {
	const op = "meta.CommitFile"
	// The commit knows its own effect on the finished bytes (commitFileTx),
	// so it is not measured by reading the users row before and after: a
	// small upload's commit is two statements shorter.
	n, delta, metaDelta, err := s.commitFileTx(ctx, tx.tx, op, uid, path, f, true)
	if err != nil {
		return Node{}, 0, wrap(op, path, err)
	}
	delta += metaDelta
	if maxGrowth >= 0 && delta > maxGrowth {
		return Node{}, 0, errs.E(op, errs.Quota, path, fmt.Errorf("quota exceeded: the change needs %d bytes, %d were reserved (the tree changed meanwhile)", delta, maxGrowth))
	}
	return n, delta, nil
}

// CopyTx is Copy inside tx; it returns the change of the user's finished bytes.
func (s *SQLStore) CopyTx(ctx context.Context, tx *Tx, uid int64, src, dst string, overwrite, recursive bool, maxGrowth int64) (int64, error) {
	const op = "meta.Copy"
	return measured(ctx, tx.tx, op, uid, src, maxGrowth, func() error {
		return copyTx(ctx, tx.tx, op, uid, src, dst, overwrite, recursive, s.now())
	})
}

// MoveTx is Move inside tx; it returns the change of the user's finished
// bytes (negative when an overwritten destination went away).
func (s *SQLStore) MoveTx(ctx context.Context, tx *Tx, uid int64, src, dst string, overwrite bool) (int64, error) {
	const op = "meta.Move"
	return measured(ctx, tx.tx, op, uid, src, NoGrowthLimit, func() error {
		return moveTx(ctx, tx.tx, op, uid, src, dst, overwrite, s.now())
	})
}

// RemoveTx is Remove inside tx; it returns the change of the user's finished
// bytes (minus the sizes of the files moved to the trash).
func (s *SQLStore) RemoveTx(ctx context.Context, tx *Tx, uid int64, path string) (int64, error) {
	const op = "meta.Remove"
	return measured(ctx, tx.tx, op, uid, path, NoGrowthLimit, func() error {
		return trashTx(ctx, tx.tx, op, uid, path, s.now())
	})
}

// SubtreeSize returns what the files and folders at or below path are
// charged, as committed now: the sum of the files' sizes and the metadata
// charge of every entry and property (charge.go; the root's own entry is
// free).
func (s *SQLStore) SubtreeSize(ctx context.Context, uid int64, path string) (int64, error) {
	const op = "meta.SubtreeSize"
	n, err := stat(ctx, s.r, op, uid, path)
	if err != nil {
		return 0, err
	}
	charge, err := chargeOf(ctx, s.r, uid, n)
	if err != nil || !n.IsDir {
		return n.Size + charge, wrap(op, path, err)
	}
	cond, args := subtree(path)
	var sz sql.NullInt64
	err = s.r.QueryRowContext(ctx, `SELECT sum(size) FROM nodes WHERE is_dir = 0 AND user_id = ? AND `+cond, append([]any{uid}, args...)...).Scan(&sz)
	return sz.Int64 + charge, wrap(op, path, err)
}

// TreeBytes implements Store.
func (s *SQLStore) TreeBytes(ctx context.Context, uid int64, path string) (int64, error) {
	const op = "meta.TreeBytes"
	n, err := stat(ctx, s.r, op, uid, path)
	if err != nil || !n.IsDir {
		return n.Size, err
	}
	cond, args := subtree(path)
	var sz sql.NullInt64
	err = s.r.QueryRowContext(ctx, `SELECT sum(size) FROM nodes WHERE is_dir = 0 AND user_id = ? AND `+cond, append([]any{uid}, args...)...).Scan(&sz)
	return sz.Int64, wrap(op, path, err)
}

// MkdirTx is Mkdir (mode as stored: 0 the default, see StoredMode) inside
// tx; it returns the node and the change of the user's charge (the new
// entry's), refused beyond maxGrowth.
func (s *SQLStore) MkdirTx(ctx context.Context, tx *Tx, uid int64, path string, mtime time.Time, mode uint32, maxGrowth int64) (Node, int64, error) {
	const op = "meta.Mkdir"
	if c := EntryCharge(baseName(path)); maxGrowth >= 0 && c > maxGrowth {
		return Node{}, 0, errs.E(op, errs.Quota, path, fmt.Errorf("quota exceeded: the folder needs %d bytes, %d were reserved", c, maxGrowth))
	}
	if mode != 0 {
		if err := checkPerm(op, path, mode&^ModeSet); err != nil {
			return Node{}, 0, err
		}
	}
	n, err := mkdirTx(ctx, tx.tx, op, uid, path, mtime, mode)
	if err != nil {
		return Node{}, 0, wrap(op, path, err)
	}
	return n, EntryCharge(baseName(path)), nil
}

// SymlinkTx is Symlink inside tx; it returns the node and the change of the
// user's charge (the target's length and the entry), refused beyond
// maxGrowth.
func (s *SQLStore) SymlinkTx(ctx context.Context, tx *Tx, uid int64, path, target string, mtime time.Time, maxGrowth int64) (Node, int64, error) {
	const op = "meta.Symlink"
	var n Node
	delta, err := measured(ctx, tx.tx, op, uid, path, maxGrowth, func() (err error) {
		n, err = symlinkTx(ctx, tx.tx, op, uid, path, target, mtime, true)
		return err
	})
	return n, delta, err
}
