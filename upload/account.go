package upload

import (
	"context"
	"database/sql"
	"fmt"

	"netdisk/drive"
	"netdisk/errs"
)

// Accountant is where the session service reports space, kept in one place so
// the quota ledger (package quota: embedded or Redis, seed 001) can replace
// the plain SQLite bookkeeping below. tx is the session store's transaction
// that records the event; an implementation writing to the same SQLite file
// uses it (so a chunk and its bytes are counted in one commit), one that keeps
// its own ledger may ignore it and reconcile from upload_sessions.received.
type Accountant interface {
	// Admit is called by init before a session is created: refuse with
	// errs.Quota a declared size that cannot fit. replaces is the size of the
	// file the upload would replace (its bytes come back at merge).
	Admit(ctx context.Context, uid int64, path string, size, replaces int64) error
	// Received counts n more bytes held by an open session (uploadChunk,
	// patchHash/prove on a chunk). It may refuse with errs.Quota.
	Received(ctx context.Context, tx *sql.Tx, uid int64, session string, n, replaces int64) error
	// Settled releases a session's held bytes when it merges (the file's size
	// is counted as finished by the commit itself).
	Settled(ctx context.Context, tx *sql.Tx, uid int64, session string, held int64) error
	// Released gives back a session's held bytes when it is abandoned or expires.
	Released(ctx context.Context, tx *sql.Tx, uid int64, session string, held int64) error
}

// SQLAccountant keeps users.use_space_unfinished in SQLite, in the same
// transaction as the session's own row.
type SQLAccountant struct{ D *drive.Drive }

var _ Accountant = SQLAccountant{}

// Admit refuses a declared size larger than total - finished - unfinished.
func (a SQLAccountant) Admit(ctx context.Context, uid int64, path string, size, replaces int64) error {
	q, err := a.D.QuotaOf(ctx, uid)
	if err != nil {
		return err
	}
	need := size - replaces
	if free := q.Free(); free >= 0 && need > free {
		return errs.E("upload.Init", errs.Quota, path, fmt.Errorf("quota exceeded: %d bytes free, %d needed", free, need))
	}
	return nil
}

// Received adds n to the unfinished bytes; a chunk that would take the user's
// server-side usage (finished + unfinished) past total is refused, so
// never-finished uploads cannot fill the disk beyond a user's quota.
func (SQLAccountant) Received(ctx context.Context, tx *sql.Tx, uid int64, session string, n, replaces int64) error {
	var total, finished, unfinished int64
	if err := tx.QueryRowContext(ctx, `SELECT quota_total, use_space_finished, use_space_unfinished FROM users WHERE id = ?`, uid).
		Scan(&total, &finished, &unfinished); err != nil {
		return err
	}
	if total > 0 && finished+unfinished+n > total+replaces {
		return errs.E("upload.Chunk", errs.Quota, "", fmt.Errorf("quota exceeded: %d bytes free, %d needed", max(total+replaces-finished-unfinished, 0), n))
	}
	_, err := tx.ExecContext(ctx, `UPDATE users SET use_space_unfinished = use_space_unfinished + ? WHERE id = ?`, n, uid)
	return err
}

// Settled subtracts the session's held bytes.
func (SQLAccountant) Settled(ctx context.Context, tx *sql.Tx, uid int64, session string, held int64) error {
	return release(ctx, tx, uid, held)
}

// Released subtracts the session's held bytes.
func (SQLAccountant) Released(ctx context.Context, tx *sql.Tx, uid int64, session string, held int64) error {
	return release(ctx, tx, uid, held)
}

func release(ctx context.Context, tx *sql.Tx, uid, held int64) error {
	if held == 0 {
		return nil
	}
	_, err := tx.ExecContext(ctx, `UPDATE users SET use_space_unfinished = max(use_space_unfinished - ?, 0) WHERE id = ?`, held, uid)
	return err
}
