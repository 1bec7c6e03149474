package meta

import (
	"context"
	"database/sql"
)

// What metadata costs. A file's bytes are not all a user keeps: every entry
// is a row (and index entries) in the database, and dead properties are free
// text; uncharged, a user could grow the database without bound within any
// quota (a million empty files, or megabytes of properties). So every file
// and folder but the root costs EntryBytes plus the bytes of its name, and
// every dead property its bytes (Prop.Bytes), against the same total as the
// files. The charge is users.use_space_meta, kept beside
// use_space_finished (the sum of file sizes, which the user sees as
// "finished"); every change that may grow either is admitted only while
// finished + meta stays within the total. Deleting gives the charge back.
//
// The name, not the path, is charged: a path is its folders' names, charged
// once each, and moving a folder must not change what its contents cost.

// EntryBytes is the fixed charge of one file or folder (a row, its index
// entries, its folder's listing): about what the database spends on an
// entry with a short name. Migration 010 uses the same figure.
const EntryBytes = 256

// EntryCharge is what an entry named name costs.
func EntryCharge(name string) int64 { return EntryBytes + int64(len(name)) }

// addMeta moves a user's metadata charge by delta; when check is set, growth
// is refused (errs.Quota) past a non-zero total.
func addMeta(ctx context.Context, tx *sql.Tx, op string, uid, delta int64, path string, check bool) error {
	return addUsage(ctx, tx, op, uid, "use_space_meta", delta, path, check, " for the entry and its properties")
}

// chargeOf returns what node n and, for a folder, everything below it cost
// (the root's own entry is free).
func chargeOf(ctx context.Context, q querier, uid int64, n Node) (int64, error) {
	var c int64
	if n.Path != "/" {
		c = EntryCharge(n.Name())
	}
	var props int64
	if err := q.QueryRowContext(ctx, `SELECT `+propBytesSQL+` FROM props WHERE node_id = ?`, n.ID).Scan(&props); err != nil {
		return 0, err
	}
	c += props
	if !n.IsDir {
		return c, nil
	}
	cond, args := subtree(n.Path)
	a := append([]any{uid}, args...)
	var count, names int64
	if err := q.QueryRowContext(ctx, `SELECT count(*), ifnull(sum(octet_length(name)), 0) FROM nodes WHERE user_id = ? AND `+cond, a...).Scan(&count, &names); err != nil {
		return 0, err
	}
	if err := q.QueryRowContext(ctx, `SELECT `+propBytesSQL+` FROM props WHERE node_id IN (SELECT id FROM nodes WHERE user_id = ? AND `+cond+`)`, a...).Scan(&props); err != nil {
		return 0, err
	}
	return c + count*EntryBytes + names + props, nil
}
