package meta

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"netdisk/errs"
)

// WebSession is a signed-in browser of the web page. TokenHash is the hex
// SHA-256 of the cookie's token: the store never holds a usable cookie.
type WebSession struct {
	TokenHash string
	UserID    int64
	CSRF      string
	Created   time.Time
	Last      time.Time // last use, as last recorded (TouchWebSession)
}

// WebSessions are the web page's sessions, kept in the store so that every
// node sharing it sees a sign-in and an end at once. Expiry is the caller's
// rule (package web): the store keeps what it is given and deletes what it is
// told to. A user's deletion ends their sessions; so does SetPassword.
type WebSessions interface {
	// CreateWebSession stores ws and ends the user's oldest sessions
	// (by creation) beyond the newest maxPerUser, in one transaction, so a
	// user's sessions stay bounded however often they sign in. A user that
	// does not exist is NotFound.
	CreateWebSession(ctx context.Context, ws WebSession, maxPerUser int) error
	// WebSession returns the session with that token hash (NotFound when
	// there is none).
	WebSession(ctx context.Context, tokenHash string) (WebSession, error)
	// TouchWebSession records a use at last; a session that is gone is
	// success (it is not brought back).
	TouchWebSession(ctx context.Context, tokenHash string, last time.Time) error
	// DeleteWebSession ends one session; a missing one is success.
	DeleteWebSession(ctx context.Context, tokenHash string) error
	// DeleteUserWebSessions ends every session of a user and says how many.
	DeleteUserWebSessions(ctx context.Context, uid int64) (int64, error)
	// DeleteExpiredWebSessions ends the sessions last used before
	// usedBefore or created before createdBefore, and says how many.
	DeleteExpiredWebSessions(ctx context.Context, usedBefore, createdBefore time.Time) (int64, error)
}

// CreateWebSession stores a session and bounds the user's (WebSessions).
func (s *SQLStore) CreateWebSession(ctx context.Context, ws WebSession, maxPerUser int) error {
	const op = "meta.CreateWebSession"
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM users WHERE id = ?`, ws.UserID).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return errs.E(op, errs.NotFound, "", errors.New("no such user"))
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO web_sessions (token_hash, user_id, csrf, created_ns, last_ns) VALUES (?, ?, ?, ?, ?)`,
			ws.TokenHash, ws.UserID, ws.CSRF, ws.Created.UnixNano(), ws.Last.UnixNano()); err != nil {
			return err
		}
		if maxPerUser <= 0 {
			return nil
		}
		// Only this user's rows are read (the index on user_id,
		// created_ns), at most maxPerUser+1 of them once the bound holds.
		_, err := tx.ExecContext(ctx, `DELETE FROM web_sessions WHERE user_id = ? AND token_hash NOT IN
			(SELECT token_hash FROM web_sessions WHERE user_id = ? ORDER BY created_ns DESC, token_hash LIMIT ?)`,
			ws.UserID, ws.UserID, maxPerUser)
		return err
	})
	return wrap(op, "", err)
}

// WebSession looks a session up by its token's hash.
func (s *SQLStore) WebSession(ctx context.Context, tokenHash string) (WebSession, error) {
	const op = "meta.WebSession"
	ws := WebSession{TokenHash: tokenHash}
	var created, last int64
	err := s.r.QueryRowContext(ctx, `SELECT user_id, csrf, created_ns, last_ns FROM web_sessions WHERE token_hash = ?`, tokenHash).
		Scan(&ws.UserID, &ws.CSRF, &created, &last)
	if errors.Is(err, sql.ErrNoRows) {
		return WebSession{}, errs.E(op, errs.NotFound, "", errors.New("no such web session"))
	}
	if err != nil {
		return WebSession{}, wrap(op, "", err)
	}
	ws.Created, ws.Last = time.Unix(0, created), time.Unix(0, last)
	return ws, nil
}

// TouchWebSession records a session's last use.
func (s *SQLStore) TouchWebSession(ctx context.Context, tokenHash string, last time.Time) error {
	_, err := s.w.ExecContext(ctx, `UPDATE web_sessions SET last_ns = ? WHERE token_hash = ? AND last_ns < ?`,
		last.UnixNano(), tokenHash, last.UnixNano())
	return wrap("meta.TouchWebSession", "", err)
}

// DeleteWebSession ends one session.
func (s *SQLStore) DeleteWebSession(ctx context.Context, tokenHash string) error {
	_, err := s.w.ExecContext(ctx, `DELETE FROM web_sessions WHERE token_hash = ?`, tokenHash)
	return wrap("meta.DeleteWebSession", "", err)
}

// DeleteUserWebSessions ends every session of a user.
func (s *SQLStore) DeleteUserWebSessions(ctx context.Context, uid int64) (int64, error) {
	res, err := s.w.ExecContext(ctx, `DELETE FROM web_sessions WHERE user_id = ?`, uid)
	if err != nil {
		return 0, wrap("meta.DeleteUserWebSessions", "", err)
	}
	n, _ := res.RowsAffected()
	return n, nil
}

// DeleteExpiredWebSessions ends the sessions past either limit.
func (s *SQLStore) DeleteExpiredWebSessions(ctx context.Context, usedBefore, createdBefore time.Time) (int64, error) {
	res, err := s.w.ExecContext(ctx, `DELETE FROM web_sessions WHERE last_ns < ? OR created_ns < ?`, usedBefore.UnixNano(), createdBefore.UnixNano())
	if err != nil {
		return 0, wrap("meta.DeleteExpiredWebSessions", "", err)
	}
	n, _ := res.RowsAffected()
	return n, nil
}
