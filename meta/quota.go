package meta

import (
	"context"
	"database/sql"
	"errors"
	"time"
)

// Quota flush records (migration 002_quota): what the quota ledger's delayed
// flushes (package quota) added to users.use_space_unfinished, per upload.
// A flush carries the upload's absolute received count and a sequence number;
// a record is settled when its session closes (MergeSession, DropSession,
// DropIdleSession settle in their own transaction), and a settled record is a
// tombstone that fences later flushes of the upload out. With the ledger,
// nothing else writes use_space_unfinished.

// QuotaFlush is one flush of the ledger: upload's received bytes as of Seq.
type QuotaFlush struct {
	User   int64
	Upload string
	Seq    int64
	Target int64 // absolute received bytes of the upload
}

// QuotaRecord is what the flushes of an open upload have applied.
type QuotaRecord struct {
	Seq     int64
	Flushed int64
}

// settledSeq is the sequence of a tombstone written before any flush: no
// flush is ever newer.
const settledSeq = int64(1 << 62)

// ApplyQuotaFlushes applies fs in one transaction and returns how many
// users-table writes it made. For each flush the user's row is written once,
// by the difference between Target and what earlier flushes of the upload
// added; a flush whose Seq is not newer than the last applied one, of a
// settled upload, or of a deleted user changes nothing.
func (s *SQLStore) ApplyQuotaFlushes(ctx context.Context, fs []QuotaFlush) (int64, error) {
	var writes int64
	err := s.tx(ctx, func(tx *sql.Tx) error {
		writes = 0 // counted again if the transaction is retried from the start
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
		return 0, wrap("meta.ApplyQuotaFlushes", "", err)
	}
	return writes, nil
}

// settleTx runs inside the transaction that closes an upload session: it
// subtracts from use_space_unfinished exactly what flushes of the upload
// added and fences any later flush of it out (a tombstone when nothing was
// flushed yet). It returns the bytes subtracted; settling twice subtracts
// once.
func settleTx(ctx context.Context, tx *sql.Tx, user int64, upload string, now time.Time) (int64, error) {
	var flushed, settled int64
	err := tx.QueryRowContext(ctx, `SELECT flushed, settled_ns FROM quota_flushes WHERE upload = ?`, upload).Scan(&flushed, &settled)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		_, err = tx.ExecContext(ctx, `INSERT INTO quota_flushes(upload, user_id, seq, flushed, settled_ns) VALUES (?, ?, ?, 0, ?)`, upload, user, settledSeq, now.UnixNano())
		return 0, err
	case err != nil:
		return 0, err
	case settled != 0:
		return 0, nil
	}
	if _, err := tx.ExecContext(ctx, `UPDATE users SET use_space_unfinished = use_space_unfinished - ? WHERE id = ?`, flushed, user); err != nil {
		return 0, err
	}
	_, err = tx.ExecContext(ctx, `UPDATE quota_flushes SET settled_ns = ? WHERE upload = ?`, now.UnixNano(), upload)
	return flushed, err
}

// RepairQuotaFlushes settles, at now, the records of uploads not in open
// (their session ended without a settlement, e.g. a crash between the
// ledger and the store), sets every user's use_space_unfinished to the sum
// of their open records, and returns the open records by upload; one
// transaction.
func (s *SQLStore) RepairQuotaFlushes(ctx context.Context, open map[string]bool, now time.Time) (map[string]QuotaRecord, error) {
	var out map[string]QuotaRecord
	err := s.tx(ctx, func(tx *sql.Tx) error {
		out = map[string]QuotaRecord{}
		rows, err := tx.QueryContext(ctx, `SELECT upload, seq, flushed FROM quota_flushes WHERE settled_ns = 0`)
		if err != nil {
			return err
		}
		var orphans []string
		for rows.Next() {
			var up string
			var r QuotaRecord
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
		for _, up := range orphans {
			if _, err := tx.ExecContext(ctx, `UPDATE quota_flushes SET settled_ns = ? WHERE upload = ?`, now.UnixNano(), up); err != nil {
				return err
			}
		}
		_, err = tx.ExecContext(ctx, `UPDATE users SET use_space_unfinished = sums.n
			FROM (SELECT u.id AS id, COALESCE((SELECT SUM(flushed) FROM quota_flushes q WHERE q.user_id = u.id AND q.settled_ns = 0), 0) AS n FROM users u) AS sums
			WHERE users.id = sums.id AND users.use_space_unfinished != sums.n`)
		return err
	})
	if err != nil {
		return nil, wrap("meta.RepairQuotaFlushes", "", err)
	}
	return out, nil
}

// PruneQuotaFlushes deletes the tombstones of uploads settled before t and
// returns how many (choose t far beyond the ledger's lease: a flush claimed
// before the settlement must have landed or died by then).
func (s *SQLStore) PruneQuotaFlushes(ctx context.Context, t time.Time) (int64, error) {
	res, err := s.w.ExecContext(ctx, `DELETE FROM quota_flushes WHERE settled_ns != 0 AND settled_ns < ?`, t.UnixNano())
	if err != nil {
		return 0, wrap("meta.PruneQuotaFlushes", "", err)
	}
	return res.RowsAffected()
}
