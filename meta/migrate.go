package meta

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"netdisk/errs"
)

// copyTables are the tables `netdisk admin migrate` copies, parents before
// children (foreign keys), with their columns. Ids are copied as they are:
// nothing outside the database refers to them, but keeping them makes the
// copy checkable row by row; a trash item's id must stay, as the hidden
// path of its nodes ('#id', trash.go) names it.
// Small chunks kept inline (chunk_data) move with the metadata, not to the
// chunk store. Instant upload's draws are copied, not drawn afresh: a content's threshold
// stays what it was. The embedded async tables are not: their records live
// 30 minutes, and nodes sharing the metadata keep async jobs in Redis. Nor
// are the web sessions: browsers sign in again on the new nodes. Nor the
// ACME cache: a single node keeps its certificates in files (--data/acme),
// and the nodes obtain theirs once.
var copyTables = []struct {
	name, cols, ids string // ids: the identity column whose sequence is reset ("" for none)
	binary          bool   // holds a BLOB column: bytes stay bytes
}{
	{"users", "id, name, pass_hash, is_admin, quota_total, use_space_finished, use_space_unfinished, use_space_meta, created_ns", "id", false},
	{"nodes", "id, user_id, path, parent, name, is_dir, size, mode, mtime_ns, file_hash, content_md5, content_sha1, link_target", "id", false},
	{"chunks", "id, sha256, md5, size, created_ns, reveal_draw", "id", false},
	{"file_draws", "file_hash, draw", "", false},
	{"file_chunks", "node_id, idx, chunk_id", "", false},
	{"chunk_data", "chunk_id, data", "", true},
	{"props", "node_id, ns, name, value, lang", "", false},
	{"quota_flushes", "upload, user_id, seq, flushed, settled_ns", "", false},
	{"upload_sessions", "id, user_id, path, size, chunk_size, file_hash, state, received, replaces, result_hash, created_ns, touched_ns", "", false},
	{"session_chunks", "session_id, idx, chunk_id", "", false},
	{"session_parts", "session_id, name, seq, chunk_id, touched_ns", "", false},
	{"upload_challenges", "session_id, idx, nonce, proof, target, expires_ns", "", false},
	{"file_versions", "id, node_id, user_id, author_id, size, mode, mtime_ns, file_hash, content_md5, content_sha1, saved_ns", "id", false},
	{"version_chunks", "version_id, idx, chunk_id", "", false},
	{"trash_items", "id, user_id, path, is_dir, size, deleted_ns, deleted_by, charge", "id", false},
}

// TableCount is one table's row count in the source and the destination.
type TableCount struct {
	Table    string
	Src, Dst int64
}

// CopyResult reports a metadata copy.
type CopyResult struct {
	Copied bool // false: the destination already held this copy (verified only)
	Tables []TableCount
}

// CopyTo copies every row of this store into dst, which must be empty (or
// hold exactly this copy already, from an earlier run: then nothing is
// written and the counts are compared). The copy is one transaction of dst:
// an interrupted copy leaves dst empty, and running it again starts over.
// Stop the daemon first: the source must not change meanwhile.
func (s *SQLStore) CopyTo(ctx context.Context, dst *Postgres) (CopyResult, error) {
	const op = "meta.CopyTo"
	var res CopyResult
	counts := func(db *sql.DB) ([]int64, error) {
		out := make([]int64, len(copyTables))
		for i, t := range copyTables {
			if err := db.QueryRowContext(ctx, `SELECT count(*) FROM `+t.name).Scan(&out[i]); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	src, err := counts(s.r)
	if err != nil {
		return res, wrap(op, "", err)
	}
	before, err := counts(dst.r)
	if err != nil {
		return res, wrap(op, "", err)
	}
	empty := true
	for _, n := range before {
		empty = empty && n == 0
	}
	if !empty {
		for i, t := range copyTables {
			res.Tables = append(res.Tables, TableCount{t.name, src[i], before[i]})
			if src[i] != before[i] {
				return res, errs.E(op, errs.Exists, "", fmt.Errorf("the destination is not empty and differs from the source (%s: %d rows, source %d): migrate into an empty database", t.name, before[i], src[i]))
			}
		}
		return res, nil
	}
	err = dst.tx(ctx, func(tx *sql.Tx) error {
		for _, t := range copyTables {
			if err := copyTable(ctx, s.r, tx, t.name, t.cols, t.binary); err != nil {
				return fmt.Errorf("%s: %w", t.name, err)
			}
			if t.ids != "" {
				// New rows continue after the copied ids, and after every
				// id SQLite ever gave (sqlite_sequence: a deleted user's
				// id is never given again, on either store).
				used, err := s.usedIDs(ctx, t.name)
				if err != nil {
					return err
				}
				if _, err := tx.ExecContext(ctx, `SELECT setval(pg_get_serial_sequence('`+t.name+`', '`+t.ids+`'), greatest(coalesce((SELECT max(`+t.ids+`) FROM `+t.name+`), 0), ?) + 1, false)`, used); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return res, wrap(op, "", err)
	}
	after, err := counts(dst.r)
	if err != nil {
		return res, wrap(op, "", err)
	}
	res.Copied = true
	for i, t := range copyTables {
		res.Tables = append(res.Tables, TableCount{t.name, src[i], after[i]})
		if src[i] != after[i] {
			return res, errs.E(op, errs.Other, "", fmt.Errorf("%s: copied %d rows of %d", t.name, after[i], src[i]))
		}
	}
	return res, nil
}

// usedIDs is the highest id SQLite has given in table (AUTOINCREMENT's
// sqlite_sequence), 0 for a table without AUTOINCREMENT.
func (s *SQLStore) usedIDs(ctx context.Context, table string) (int64, error) {
	var used int64
	err := s.r.QueryRowContext(ctx, `SELECT seq FROM sqlite_sequence WHERE name = ?`, table).Scan(&used)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return used, err
}

// copyTable copies one table in batches of multi-row INSERTs.
func copyTable(ctx context.Context, from *sql.DB, to *sql.Tx, table, cols string, binary bool) error {
	ncol := len(strings.Split(cols, ","))
	rows, err := from.QueryContext(ctx, `SELECT `+cols+` FROM `+table)
	if err != nil {
		return err
	}
	defer rows.Close()
	const batch = 200
	row := "(" + strings.TrimSuffix(strings.Repeat("?,", ncol), ",") + ")"
	var args []any
	n := 0
	flush := func() error {
		if n == 0 {
			return nil
		}
		q := `INSERT INTO ` + table + `(` + cols + `) VALUES ` + strings.TrimSuffix(strings.Repeat(row+",", n), ",")
		_, err := to.ExecContext(ctx, q, args...)
		args, n = args[:0], 0
		return err
	}
	for rows.Next() {
		vals := make([]any, ncol)
		ptrs := make([]any, ncol)
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		for i, v := range vals {
			if b, ok := v.([]byte); ok && !binary {
				vals[i] = string(b) // SQLite hands TEXT back as bytes at times
			}
		}
		args = append(args, vals...)
		n++
		if n == batch {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	return flush()
}
