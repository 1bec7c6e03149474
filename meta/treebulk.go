package meta

import (
	"context"
	"database/sql"
)

// treeBulk runs q, one statement that rewrites or deletes the rows strictly
// below a folder, with the per-row tree_seq triggers off for its rows
// (migrations/028_tree_bulk.sql): with them on, each row's bump climbed to
// the root, so the statement cost its row count times the subtree's depth.
// The entries below keep their ids and their own tree_seq, and nothing
// outside the subtree needs more than the caller's own statement on the
// subtree's top, run after this one with the triggers on again: its change
// of path (or its deletion) bumps the old and the new parent chains once.
//
// Every statement over whole subtrees goes through here (moveRows,
// deleteRows, EmptyTrash); the marker row is visible only inside this transaction and
// never outlives it, since a failed statement fails the transaction.
func treeBulk(ctx context.Context, tx *sql.Tx, q string, args ...any) error {
	if _, err := tx.ExecContext(ctx, `INSERT INTO tree_bulk(active) VALUES (1)`); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, q, args...)
	if _, cerr := tx.ExecContext(ctx, `DELETE FROM tree_bulk`); err == nil {
		err = cerr
	}
	return err
}

// moveRows rewrites the paths of everything strictly below from so that it
// lies below to instead: one statement whatever the subtree's size. The
// caller moves from's own row next (treeBulk says why).
//
// substr counts characters in both databases, where Go's len counts bytes:
// the offset is from's length as the database itself counts it, so that a
// path with letters of several bytes is cut exactly where from ends.
func moveRows(ctx context.Context, tx *sql.Tx, uid int64, from, to string) error {
	cond, args := subtree(from)
	q := `UPDATE nodes SET path = ? || substr(path, length(CAST(? AS TEXT)) + 1), parent = ? || substr(parent, length(CAST(? AS TEXT)) + 1) WHERE user_id = ? AND ` + cond
	return treeBulk(ctx, tx, q, append([]any{to, from, to, from, uid}, args...)...)
}

// deleteRows deletes everything strictly below dir; the caller deletes
// dir's own row next (treeBulk says why).
func deleteRows(ctx context.Context, tx *sql.Tx, uid int64, dir string) error {
	cond, args := subtree(dir)
	return treeBulk(ctx, tx, `DELETE FROM nodes WHERE user_id = ? AND `+cond, append([]any{uid}, args...)...)
}
