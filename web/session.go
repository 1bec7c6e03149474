package web

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"log/slog"
	"time"

	"netdisk/errs"
	"netdisk/meta"
)

// Session lifetimes. Idle expiry ends a session nobody used for a while (a
// running upload keeps it alive: every request touches it); absolute expiry
// ends it however busy it is, so a stolen cookie is not good forever.
const (
	DefaultIdle     = 12 * time.Hour
	DefaultAbsolute = 7 * 24 * time.Hour
	// DefaultMaxPerUser bounds one user's sessions: a new sign-in beyond it
	// ends their oldest (browsers left signed in elsewhere sign out first).
	DefaultMaxPerUser = 32
	// touchEvery is how stale a session's recorded last use may get before
	// a request writes it again: idle expiry is hours, so a write per
	// session per minute is precise enough and spares the store a write
	// per request.
	touchEvery = time.Minute
)

// Session is one signed-in browser.
type Session struct {
	UserID  int64
	CSRF    string // sent by the page in X-CSRF-Token on every state-changing request
	Created time.Time
	Last    time.Time
}

// Sessions are the signed-in browsers, kept in the metadata store
// (meta.WebSessions): every node sharing the store knows a sign-in made
// through any of them, and an end (sign-out, a new password, the user's
// deletion) is an end on all of them; a restart signs nobody out. Tokens are
// stored by their SHA-256, so the store never holds a usable cookie value.
// Expiry is decided here on the injected clock: a lookup ends an expired
// session, and Prune removes the ones nobody comes back with.
type Sessions struct {
	Now        func() time.Time
	Idle       time.Duration
	Absolute   time.Duration
	MaxPerUser int
	Log        *slog.Logger

	store meta.WebSessions
}

// NewSessions returns the sessions kept in store, with the default lifetimes.
func NewSessions(store meta.WebSessions, now func() time.Time) *Sessions {
	if now == nil {
		now = time.Now
	}
	return &Sessions{Now: now, Idle: DefaultIdle, Absolute: DefaultAbsolute, MaxPerUser: DefaultMaxPerUser, Log: slog.Default(), store: store}
}

func randomToken() string {
	b := make([]byte, 32)
	rand.Read(b) // crypto/rand.Read never fails (it panics if the OS cannot provide)
	return base64.RawURLEncoding.EncodeToString(b)
}

func key(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// Create starts a session and returns its cookie token. The user's oldest
// sessions beyond MaxPerUser end.
func (s *Sessions) Create(ctx context.Context, uid int64) (string, Session, error) {
	now := s.Now()
	token := randomToken()
	ss := Session{UserID: uid, CSRF: randomToken(), Created: now, Last: now}
	err := s.store.CreateWebSession(ctx, meta.WebSession{TokenHash: key(token), UserID: uid, CSRF: ss.CSRF, Created: now, Last: now}, s.MaxPerUser)
	if err != nil {
		return "", Session{}, err
	}
	return token, ss, nil
}

// Lookup returns the live session of token and marks it used. An unknown or
// expired session is errs.NotFound (an expired one is ended); a store that
// cannot answer is its error (Unavailable: 503, not a sign-out).
func (s *Sessions) Lookup(ctx context.Context, token string) (Session, error) {
	const op = "web.Lookup"
	if token == "" {
		return Session{}, errs.Errorf(op, errs.NotFound, "no session")
	}
	now := s.Now()
	k := key(token)
	ws, err := s.store.WebSession(ctx, k)
	if err != nil {
		return Session{}, err
	}
	ss := Session{UserID: ws.UserID, CSRF: ws.CSRF, Created: ws.Created, Last: ws.Last}
	if s.expired(ss, now) {
		// Ended either way: Prune removes a row this could not.
		if err := s.store.DeleteWebSession(ctx, k); err != nil {
			s.Log.Warn("web sessions: cannot remove an expired session", "err", err)
		}
		return Session{}, errs.Errorf(op, errs.NotFound, "session expired")
	}
	if now.Sub(ss.Last) >= touchEvery {
		// A use that cannot be recorded (the database busy or full) only
		// brings the idle expiry closer: the request is still the user's.
		if err := s.store.TouchWebSession(ctx, k, now); err != nil {
			s.Log.Warn("web sessions: cannot record a session's use", "err", err)
		} else {
			ss.Last = now
		}
	}
	return ss, nil
}

// Delete ends the session of token (sign-out), on every node.
func (s *Sessions) Delete(ctx context.Context, token string) error {
	return s.store.DeleteWebSession(ctx, key(token))
}

// DeleteUser ends every session of a user.
func (s *Sessions) DeleteUser(ctx context.Context, uid int64) error {
	_, err := s.store.DeleteUserWebSessions(ctx, uid)
	return err
}

// Prune ends every expired session (also those of browsers that never come
// back) in one statement of the store, and says how many.
func (s *Sessions) Prune(ctx context.Context) (int64, error) {
	now := s.Now()
	return s.store.DeleteExpiredWebSessions(ctx, now.Add(-s.Idle), now.Add(-s.Absolute))
}

func (s *Sessions) expired(ss Session, now time.Time) bool {
	return now.Sub(ss.Last) >= s.Idle || now.Sub(ss.Created) >= s.Absolute
}

// CSRFOK compares the header token with the session's in constant time.
func (ss Session) CSRFOK(got string) bool {
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(ss.CSRF)) == 1
}
