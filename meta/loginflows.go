package meta

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"netdisk/errs"
)

// LoginFlow is a Login Flow v2 sign-in in progress (migration 032): found
// by the SHA-256 of either of its tokens, granted by a user, collected once.
type LoginFlow struct {
	PollHash, LoginHash string
	Device, Server      string
	UserID              int64 // who granted it; 0 while pending
	Expires             time.Time
}

// LoginFlows keep the pending Login Flow v2 sign-ins in the store the nodes
// share: a flow started through one node is granted and collected through
// any. Expired flows are as good as gone for every method.
type LoginFlows interface {
	// AddLoginFlow stores f unless max flows are live at now (errs.Throttled),
	// dropping the expired ones first.
	AddLoginFlow(ctx context.Context, f LoginFlow, max int, now time.Time) error
	// PendingLoginFlow returns the live, not yet granted flow of loginHash;
	// NotFound otherwise.
	PendingLoginFlow(ctx context.Context, loginHash string, now time.Time) (LoginFlow, error)
	// GrantLoginFlow marks the pending live flow of loginHash granted by
	// uid; NotFound when there is none (unknown, expired, granted already).
	GrantLoginFlow(ctx context.Context, loginHash string, uid int64, now time.Time) error
	// TakeLoginFlow returns the live flow of pollHash; a granted one is
	// deleted in the same transaction (collected once). NotFound when there
	// is none.
	TakeLoginFlow(ctx context.Context, pollHash string, now time.Time) (LoginFlow, error)
}

var errNoLoginFlow = errors.New("no such sign-in, or it expired")

// AddLoginFlow stores a flow (LoginFlows).
func (s *SQLStore) AddLoginFlow(ctx context.Context, f LoginFlow, max int, now time.Time) error {
	const op = "meta.AddLoginFlow"
	return wrap(op, "", s.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM login_flows WHERE expires_ns <= ?`, now.UnixNano()); err != nil {
			return err
		}
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM login_flows`).Scan(&n); err != nil {
			return err
		}
		if n >= max {
			return errs.Errorf(op, errs.Throttled, "too many sign-ins in progress: retry later")
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO login_flows(poll_hash, login_hash, device, server, expires_ns) VALUES (?,?,?,?,?)`,
			f.PollHash, f.LoginHash, f.Device, f.Server, f.Expires.UnixNano())
		return err
	}))
}

const loginFlowCols = `poll_hash, login_hash, device, server, COALESCE(user_id, 0), expires_ns`

func scanLoginFlow(row rowScanner) (LoginFlow, error) {
	var f LoginFlow
	var exp int64
	err := row.Scan(&f.PollHash, &f.LoginHash, &f.Device, &f.Server, &f.UserID, &exp)
	f.Expires = time.Unix(0, exp)
	return f, err
}

// PendingLoginFlow finds a flow by its login token's hash (LoginFlows).
func (s *SQLStore) PendingLoginFlow(ctx context.Context, loginHash string, now time.Time) (LoginFlow, error) {
	const op = "meta.PendingLoginFlow"
	f, err := scanLoginFlow(s.r.QueryRowContext(ctx, `SELECT `+loginFlowCols+` FROM login_flows
		WHERE login_hash = ? AND user_id IS NULL AND expires_ns > ?`, loginHash, now.UnixNano()))
	if errors.Is(err, sql.ErrNoRows) {
		return LoginFlow{}, errs.E(op, errs.NotFound, "", errNoLoginFlow)
	}
	return f, wrap(op, "", err)
}

// GrantLoginFlow grants a pending flow (LoginFlows).
func (s *SQLStore) GrantLoginFlow(ctx context.Context, loginHash string, uid int64, now time.Time) error {
	const op = "meta.GrantLoginFlow"
	res, err := s.w.ExecContext(ctx, `UPDATE login_flows SET user_id = ? WHERE login_hash = ? AND user_id IS NULL AND expires_ns > ?`,
		uid, loginHash, now.UnixNano())
	if err != nil {
		return wrap(op, "", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return errs.E(op, errs.NotFound, "", errNoLoginFlow)
	}
	return nil
}

// TakeLoginFlow collects a flow by its poll token's hash (LoginFlows).
func (s *SQLStore) TakeLoginFlow(ctx context.Context, pollHash string, now time.Time) (LoginFlow, error) {
	const op = "meta.TakeLoginFlow"
	var f LoginFlow
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var err error
		f, err = scanLoginFlow(tx.QueryRowContext(ctx, `SELECT `+loginFlowCols+` FROM login_flows
			WHERE poll_hash = ? AND expires_ns > ?`, pollHash, now.UnixNano()))
		if errors.Is(err, sql.ErrNoRows) {
			return errs.E(op, errs.NotFound, "", errNoLoginFlow)
		}
		if err != nil || f.UserID == 0 {
			return err
		}
		// Collected once: of two polls racing, one deletes the row.
		res, err := tx.ExecContext(ctx, `DELETE FROM login_flows WHERE poll_hash = ?`, pollHash)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return errs.E(op, errs.NotFound, "", errNoLoginFlow)
		}
		return nil
	})
	return f, wrap(op, "", err)
}
