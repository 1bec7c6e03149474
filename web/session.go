package web

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"sync"
	"time"
)

// Session lifetimes. Idle expiry ends a session nobody used for a while (a
// running upload keeps it alive: every request touches it); absolute expiry
// ends it however busy it is, so a stolen cookie is not good forever.
const (
	DefaultIdle     = 12 * time.Hour
	DefaultAbsolute = 7 * 24 * time.Hour
)

// Session is one signed-in browser.
type Session struct {
	UserID  int64
	Name    string
	CSRF    string // sent by the page in X-CSRF-Token on every state-changing request
	Created time.Time
	Last    time.Time
}

// Sessions keeps the signed-in browsers in memory: a daemon restart signs
// everybody out (the page then says so and uploads resume after sign-in from
// the server's chunk bitmap). Tokens are stored by their SHA-256, so the map
// never holds a usable cookie value.
type Sessions struct {
	Now      func() time.Time
	Idle     time.Duration
	Absolute time.Duration

	mu sync.Mutex
	m  map[[32]byte]*Session
}

// NewSessions returns an empty store with the default lifetimes.
func NewSessions(now func() time.Time) *Sessions {
	if now == nil {
		now = time.Now
	}
	return &Sessions{Now: now, Idle: DefaultIdle, Absolute: DefaultAbsolute, m: map[[32]byte]*Session{}}
}

func randomToken() string {
	b := make([]byte, 32)
	rand.Read(b) // crypto/rand.Read never fails (it panics if the OS cannot provide)
	return base64.RawURLEncoding.EncodeToString(b)
}

func key(token string) [32]byte { return sha256.Sum256([]byte(token)) }

// Create starts a session and returns its cookie token.
func (s *Sessions) Create(uid int64, name string) (string, Session) {
	now := s.Now()
	token := randomToken()
	ss := &Session{UserID: uid, Name: name, CSRF: randomToken(), Created: now, Last: now}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sweepLocked(now)
	s.m[key(token)] = ss
	return token, *ss
}

// Lookup returns the live session of token and marks it used; an expired
// session is removed.
func (s *Sessions) Lookup(token string) (Session, bool) {
	if token == "" {
		return Session{}, false
	}
	now := s.Now()
	k := key(token)
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, ok := s.m[k]
	if !ok {
		return Session{}, false
	}
	if s.expired(ss, now) {
		delete(s.m, k)
		return Session{}, false
	}
	ss.Last = now
	return *ss, true
}

// Delete ends the session of token (sign-out).
func (s *Sessions) Delete(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, key(token))
}

// DeleteUser ends every session of a user (e.g. after the account is deleted).
func (s *Sessions) DeleteUser(uid int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, ss := range s.m {
		if ss.UserID == uid {
			delete(s.m, k)
		}
	}
}

// Len is the number of sessions held (live or not yet swept).
func (s *Sessions) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}

func (s *Sessions) expired(ss *Session, now time.Time) bool {
	return now.Sub(ss.Last) >= s.Idle || now.Sub(ss.Created) >= s.Absolute
}

// sweepLocked drops expired sessions, so abandoned ones do not pile up.
func (s *Sessions) sweepLocked(now time.Time) {
	for k, ss := range s.m {
		if s.expired(ss, now) {
			delete(s.m, k)
		}
	}
}

// CSRFOK compares the header token with the session's in constant time.
func (ss Session) CSRFOK(got string) bool {
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(ss.CSRF)) == 1
}
