package meta

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"netdisk/errs"
)

// AppToken is an app password: a secret that signs a device or a program in
// as its user wherever a password does. TokenHash is the hex SHA-256 of the
// secret: the store never holds a usable token.
type AppToken struct {
	TokenHash string
	UserID    int64
	Name      string // the user's name for it, unique among their tokens
	Created   time.Time
	Last      time.Time // last use as last recorded (TouchAppToken); zero: never used
}

// AppTokens are the users' app passwords, kept in the store so that a token
// made or revoked through one node is made or revoked on every node sharing
// it, at once: the drive looks a token up on every use rather than caching
// it. A user's deletion ends their tokens; a new password does not.
type AppTokens interface {
	// CreateAppToken stores t. A name the user already gave a token is
	// Exists; a user that does not exist is NotFound.
	CreateAppToken(ctx context.Context, t AppToken) error
	// AppTokenUser returns the token with that hash and its user, in one
	// read (the drive asks on every request a token signs). NotFound when
	// there is none.
	AppTokenUser(ctx context.Context, tokenHash string) (AppToken, User, error)
	// AppTokens lists a user's tokens by name.
	AppTokens(ctx context.Context, uid int64) ([]AppToken, error)
	// TouchAppToken records a use at last, never moving it back; a token
	// that is gone is success (it is not brought back).
	TouchAppToken(ctx context.Context, tokenHash string, last time.Time) error
	// DeleteAppToken revokes the user's token of that name; NotFound when
	// they have none by that name.
	DeleteAppToken(ctx context.Context, uid int64, name string) error
}

// CreateAppToken stores a token (AppTokens).
func (s *SQLStore) CreateAppToken(ctx context.Context, t AppToken) error {
	const op = "meta.CreateAppToken"
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM users WHERE id = ?`, t.UserID).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return errs.E(op, errs.NotFound, "", errors.New("no such user"))
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO app_tokens (token_hash, user_id, name, created_ns, last_ns) VALUES (?, ?, ?, ?, 0)`,
			t.TokenHash, t.UserID, t.Name, t.Created.UnixNano())
		if isUnique(err) {
			return errs.E(op, errs.Exists, "", fmt.Errorf("you already have a token named %q", t.Name))
		}
		return err
	})
	return wrap(op, "", err)
}

const appTokenCols = `t.token_hash, t.user_id, t.name, t.created_ns, t.last_ns`

func scanAppToken(row rowScanner, extra ...any) (AppToken, error) {
	var t AppToken
	var created, last int64
	err := row.Scan(append([]any{&t.TokenHash, &t.UserID, &t.Name, &created, &last}, extra...)...)
	t.Created = time.Unix(0, created)
	if last != 0 {
		t.Last = time.Unix(0, last)
	}
	return t, err
}

// AppTokenUser looks a token and its user up by the token's hash.
func (s *SQLStore) AppTokenUser(ctx context.Context, tokenHash string) (AppToken, User, error) {
	const op = "meta.AppTokenUser"
	var u User
	var created int64
	t, err := scanAppToken(s.r.QueryRowContext(ctx, `SELECT `+appTokenCols+`, u.id, u.name, u.pass_hash, u.is_admin, u.quota_total,
		u.use_space_finished, u.use_space_unfinished, u.use_space_meta, u.created_ns
		FROM app_tokens t JOIN users u ON u.id = t.user_id WHERE t.token_hash = ?`, tokenHash),
		&u.ID, &u.Name, &u.PassHash, &u.IsAdmin, &u.QuotaTotal, &u.Finished, &u.Unfinished, &u.Meta, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return AppToken{}, User{}, errs.E(op, errs.NotFound, "", errors.New("no such app token"))
	}
	if err != nil {
		return AppToken{}, User{}, wrap(op, "", err)
	}
	u.Created = time.Unix(0, created)
	return t, u, nil
}

// AppTokens lists a user's tokens by name.
func (s *SQLStore) AppTokens(ctx context.Context, uid int64) ([]AppToken, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+appTokenCols+` FROM app_tokens t WHERE t.user_id = ? ORDER BY t.name`, uid)
	out, err := scanAll(rows, err, func(r rowScanner) (AppToken, error) { return scanAppToken(r) })
	return out, wrap("meta.AppTokens", "", err)
}

// TouchAppToken records a token's last use.
func (s *SQLStore) TouchAppToken(ctx context.Context, tokenHash string, last time.Time) error {
	_, err := s.w.ExecContext(ctx, `UPDATE app_tokens SET last_ns = ? WHERE token_hash = ? AND last_ns < ?`,
		last.UnixNano(), tokenHash, last.UnixNano())
	return wrap("meta.TouchAppToken", "", err)
}

// DeleteAppToken revokes one of a user's tokens by name.
func (s *SQLStore) DeleteAppToken(ctx context.Context, uid int64, name string) error {
	const op = "meta.DeleteAppToken"
	res, err := s.w.ExecContext(ctx, `DELETE FROM app_tokens WHERE user_id = ? AND name = ?`, uid, name)
	if err != nil {
		return wrap(op, "", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return errs.E(op, errs.NotFound, "", fmt.Errorf("no token named %q", name))
	}
	return nil
}
