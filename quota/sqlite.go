package quota

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"netdisk/errs"
	"netdisk/meta"
)

// SQLiteSink is the Sink on netdisk's SQLite database (table quota_flushes,
// migration meta/migrations/002_quota.sql, and users.use_space_unfinished).
type SQLiteSink struct {
	db     *meta.SQLite
	now    func() time.Time
	writes atomic.Int64 // users-table writes made by Flush (for metrics and the benchmark)
}

var _ Sink = (*SQLiteSink)(nil)

// NewSQLiteSink returns the sink on db.
func NewSQLiteSink(db *meta.SQLite, now func() time.Time) *SQLiteSink {
	if now == nil {
		now = time.Now
	}
	return &SQLiteSink{db: db, now: now}
}

// Writes returns how many times Flush wrote the users table.
func (s *SQLiteSink) Writes() int64 { return s.writes.Load() }

// Flush applies the flushes in one transaction. For each, the users row is
// written once, by the difference between the session's new received count
// and what earlier flushes of it added; a flush whose Seq is not newer than
// the last applied one, or of a settled session, changes nothing.
func (s *SQLiteSink) Flush(ctx context.Context, fs []Flush) error {
	var writes int64
	err := s.db.Tx(ctx, func(tx *sql.Tx) error {
		for _, f := range fs {
			var seq, flushed, settled int64
			err := tx.QueryRowContext(ctx, `SELECT seq, flushed, settled_ns FROM quota_flushes WHERE upload = ?`, f.Upload).Scan(&seq, &flushed, &settled)
			exists := err == nil
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				return err
			}
			if exists && (settled != 0 || seq >= f.Seq) {
				continue
			}
			if delta := f.Target - flushed; delta != 0 {
				res, err := tx.ExecContext(ctx, `UPDATE users SET use_space_unfinished = use_space_unfinished + ? WHERE id = ?`, delta, f.User)
				if err != nil {
					return err
				}
				if n, _ := res.RowsAffected(); n == 0 {
					continue // the user was deleted; nothing to count
				}
				writes++
			}
			if exists {
				_, err = tx.ExecContext(ctx, `UPDATE quota_flushes SET seq = ?, flushed = ? WHERE upload = ?`, f.Seq, f.Target, f.Upload)
			} else {
				_, err = tx.ExecContext(ctx, `INSERT INTO quota_flushes(upload, user_id, seq, flushed) SELECT ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM users WHERE id = ?)`,
					f.Upload, f.User, f.Seq, f.Target, f.User)
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return errs.E("quota.Flush", errs.Unavailable, "", err)
	}
	s.writes.Add(writes)
	return nil
}

// Settle is called inside the transaction that ends an upload session
// (merge, abort, expiry): it subtracts from use_space_unfinished exactly what
// flushes of the upload added, and fences any later flush of it out. It
// returns the bytes subtracted. Settling twice subtracts once.
func (s *SQLiteSink) Settle(ctx context.Context, tx *sql.Tx, user int64, upload string) (int64, error) {
	var flushed, settled int64
	err := tx.QueryRowContext(ctx, `SELECT flushed, settled_ns FROM quota_flushes WHERE upload = ?`, upload).Scan(&flushed, &settled)
	now := s.now().UnixNano()
	switch {
	case errors.Is(err, sql.ErrNoRows):
		// Nothing flushed yet; the tombstone stops a flush in flight.
		_, err = tx.ExecContext(ctx, `INSERT INTO quota_flushes(upload, user_id, seq, flushed, settled_ns) VALUES (?, ?, ?, 0, ?)`, upload, user, int64(1<<62), now)
		return 0, err
	case err != nil:
		return 0, err
	case settled != 0:
		return 0, nil
	}
	if _, err := tx.ExecContext(ctx, `UPDATE users SET use_space_unfinished = use_space_unfinished - ? WHERE id = ?`, flushed, user); err != nil {
		return 0, err
	}
	_, err = tx.ExecContext(ctx, `UPDATE quota_flushes SET settled_ns = ? WHERE upload = ?`, now, upload)
	return flushed, err
}

// PruneSettled deletes tombstones of sessions settled before the cutoff
// (choose it far beyond the ledger's lease: a flush claimed before the
// settlement must have landed or died by then).
func (s *SQLiteSink) PruneSettled(ctx context.Context, before time.Time) (int64, error) {
	res, err := s.db.DB().ExecContext(ctx, `DELETE FROM quota_flushes WHERE settled_ns != 0 AND settled_ns < ?`, before.UnixNano())
	if err != nil {
		return 0, fmt.Errorf("quota: prune: %w", err)
	}
	return res.RowsAffected()
}

// Users returns every user's totals.
func (s *SQLiteSink) Users(ctx context.Context) ([]UserTotals, error) {
	rows, err := s.db.ReadDB().QueryContext(ctx, `SELECT id, quota_total, use_space_finished FROM users`)
	if err != nil {
		return nil, errs.E("quota.Users", errs.Unavailable, "", err)
	}
	defer rows.Close()
	var out []UserTotals
	for rows.Next() {
		var u UserTotals
		if err := rows.Scan(&u.User, &u.Total, &u.Finished); err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	return out, rows.Err()
}

// User returns one user's totals.
func (s *SQLiteSink) User(ctx context.Context, id int64) (UserTotals, error) {
	u := UserTotals{User: id}
	err := s.db.ReadDB().QueryRowContext(ctx, `SELECT quota_total, use_space_finished FROM users WHERE id = ?`, id).Scan(&u.Total, &u.Finished)
	if errors.Is(err, sql.ErrNoRows) {
		return u, errs.E("quota.User", errs.NotFound, "", errors.New("no such user"))
	}
	if err != nil {
		return u, errs.E("quota.User", errs.Unavailable, "", err)
	}
	return u, nil
}

// Repair settles the records of uploads that are not open (their session
// ended without Settle, e.g. a crash between the ledger and SQLite), sets
// every user's use_space_unfinished to the sum of their open records, and
// returns those records.
func (s *SQLiteSink) Repair(ctx context.Context, open map[string]bool) (map[string]FlushRecord, error) {
	out := map[string]FlushRecord{}
	err := s.db.Tx(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT upload, seq, flushed FROM quota_flushes WHERE settled_ns = 0`)
		if err != nil {
			return err
		}
		var orphans []string
		for rows.Next() {
			var up string
			var r FlushRecord
			if err := rows.Scan(&up, &r.Seq, &r.Flushed); err != nil {
				rows.Close()
				return err
			}
			if open[up] {
				out[up] = r
			} else {
				orphans = append(orphans, up)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		now := s.now().UnixNano()
		for _, up := range orphans {
			if _, err := tx.ExecContext(ctx, `UPDATE quota_flushes SET settled_ns = ? WHERE upload = ?`, now, up); err != nil {
				return err
			}
		}
		_, err = tx.ExecContext(ctx, `UPDATE users SET use_space_unfinished = sums.n
			FROM (SELECT u.id AS id, COALESCE((SELECT SUM(flushed) FROM quota_flushes q WHERE q.user_id = u.id AND q.settled_ns = 0), 0) AS n FROM users u) AS sums
			WHERE users.id = sums.id AND users.use_space_unfinished != sums.n`)
		return err
	})
	if err != nil {
		return nil, errs.E("quota.Repair", errs.Unavailable, "", err)
	}
	return out, nil
}
