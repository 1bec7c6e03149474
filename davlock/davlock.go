// Package davlock is netdisk's one table of WebDAV write locks and the rule
// that enforces them. The WebDAV adapter takes and lists locks here; the
// drive consults the same table on every mutating operation, so a lock binds
// every surface (WebDAV, the JSON API, the FUSE mount over it), not only the
// WebDAV requests that took it.
//
// The tokens a request submits travel in its context (WithTokens): the
// adapters parse them from their headers, the drive reads them back.
package davlock

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"netdisk/errs"
	"netdisk/vpath"
)

// Table is a lock table. Manager keeps it in process; the interface is what
// a shared one (e.g. in Redis, for several daemons) would implement. Paths
// are cleaned drive paths; tables are per user, keyed by the tree a path
// lies in: a lock a share's recipient takes inside it is in the owner's
// table (drive.LockPlace), with the recipient as its Creator.
type Table interface {
	// Create takes a new lock (Root, Infinite, Shared, Owner, Timeout set)
	// and returns it with token and expiry; kind Locked on a conflict.
	Create(uid int64, l Lock) (Lock, error)
	// Refresh restarts the timeout of token's lock, whose scope must include name.
	Refresh(uid int64, token, name string, timeout time.Duration) (Lock, error)
	// Unlock removes token's lock, whose scope must include name.
	Unlock(uid int64, token, name string) error
	// Holds reports whether token is a live lock whose scope includes name.
	Holds(uid int64, token, name string) bool
	// Covering returns the live locks whose scope includes name, oldest root first.
	Covering(uid int64, name string) []Lock
	// Below returns the live locks rooted strictly below name.
	Below(uid int64, name string) []Lock
	// Release destroys the locks rooted at name or below it.
	Release(uid int64, name string) int
	// ReleaseBelow destroys the locks rooted strictly below name.
	ReleaseBelow(uid int64, name string) int
	// Count returns uid's number of live locks.
	Count(uid int64) int
	// Now is the table's clock.
	Now() time.Time
}

// Target is one resource a write affects.
type Target struct {
	Path string
	// Deep: the write removes or replaces the whole subtree (DELETE, the
	// source of a MOVE, the destination of a MOVE or COPY), so locks on
	// members count too.
	Deep bool
	// Membership: the write adds or removes Path as a member of its parent
	// collection, so a depth-0 lock on the parent counts too (RFC 4918 §7.5);
	// depth-infinity locks of ancestors already cover Path itself.
	Membership bool
}

// Check refuses (kind Locked) a write to the targets of uid's drive unless
// every lock in the way has its token among tokens; among locks covering
// one resource (shared ones) one token suffices. A nil table allows all.
func Check(t Table, uid int64, tokens []string, targets ...Target) error {
	if t == nil {
		return nil
	}
	submitted := make(map[string]bool, len(tokens))
	for _, tok := range tokens {
		submitted[tok] = true
	}
	for _, tg := range targets {
		name, err := vpath.Clean(tg.Path)
		if err != nil {
			return errs.E("davlock.Check", errs.Invalid, tg.Path, err)
		}
		if cov := t.Covering(uid, name); len(cov) > 0 && !anySubmitted(cov, submitted) {
			return refusal(name, cov[0])
		}
		if tg.Deep {
			for _, l := range t.Below(uid, name) {
				if submitted[l.Token] || anySubmitted(t.Covering(uid, l.Root), submitted) {
					continue
				}
				return refusal(name, l)
			}
		}
		if parent := vpath.Parent(name); tg.Membership && parent != "" {
			var direct []Lock
			for _, l := range t.Covering(uid, parent) {
				if l.Root == parent && !l.Infinite {
					direct = append(direct, l)
				}
			}
			if len(direct) > 0 && !anySubmitted(direct, submitted) {
				return lockedError(name, parent)
			}
		}
	}
	return nil
}

func anySubmitted(ls []Lock, submitted map[string]bool) bool {
	for _, l := range ls {
		if submitted[l.Token] {
			return true
		}
	}
	return false
}

// UnavailableToken names the stand-in lock a shared table reports when it
// cannot tell which locks exist (redis.go): the write is refused as
// Unavailable (503, try again), not as locked by someone.
const UnavailableToken = "opaquelocktoken:unavailable"

func refusal(name string, l Lock) error {
	if l.Token == UnavailableToken {
		return errs.E("davlock.Check", errs.Unavailable, name, errors.New("the lock table is unavailable; try again"))
	}
	return lockedError(name, l.Root)
}

func lockedError(name, root string) error {
	return errs.E("davlock.Check", errs.Locked, name, &Held{Root: root})
}

// Held is the cause of a Locked refusal: the lock in the way, named by its
// root. It is a type, not text, so that a caller answering in another
// user's terms (a share's recipient) can name the root in theirs: the
// owner's folder names must not show through a share.
type Held struct {
	Root string
	// Conflict: a new lock was refused (else a write was).
	Conflict bool
}

func (h *Held) Error() string {
	if h.Conflict {
		return "conflicts with a lock on " + h.Root
	}
	return "locked (lock on " + h.Root + "); submit its lock token in an If or Lock-Token header"
}

type tokensKey struct{}

// WithTokens returns ctx carrying the lock tokens a request submitted.
func WithTokens(ctx context.Context, tokens []string) context.Context {
	if len(tokens) == 0 {
		return ctx
	}
	return context.WithValue(ctx, tokensKey{}, tokens)
}

// Tokens returns the lock tokens ctx carries.
func Tokens(ctx context.Context) []string {
	ts, _ := ctx.Value(tokensKey{}).([]string)
	return ts
}

// HeaderTokens returns the lock tokens submitted in an If header (every
// Coded-URL inside a list, not negated: "(<opaquelocktoken:…>)") and a
// Lock-Token header ("<opaquelocktoken:…>"), for the JSON API. It is kind
// Invalid when either header is malformed. The WebDAV adapter evaluates If
// fully itself (conditions, ETags, resource tags).
func HeaderTokens(h http.Header) ([]string, error) {
	var out []string
	if vs := h.Values("If"); len(vs) > 0 {
		ts, err := ifTokens(strings.Join(vs, " "))
		if err != nil {
			return nil, err
		}
		out = append(out, ts...)
	}
	for _, v := range h.Values("Lock-Token") {
		v = strings.TrimSpace(v)
		if len(v) < 3 || v[0] != '<' || v[len(v)-1] != '>' || strings.ContainsAny(v[1:len(v)-1], "<> \t") {
			return nil, errs.Errorf("davlock.HeaderTokens", errs.Invalid, "Lock-Token header must be <opaquelocktoken:...>")
		}
		out = append(out, v[1:len(v)-1])
	}
	return out, nil
}

var errBadIf = errs.Errorf("davlock.HeaderTokens", errs.Invalid, "malformed If header: expected (<opaquelocktoken:...>)")

// ifTokens scans an If header for the state tokens of its lists.
func ifTokens(s string) ([]string, error) {
	var out []string
	inList, not := false, false
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\r' || c == '\n':
			i++
		case c == '(' && !inList:
			inList, not = true, false
			i++
		case c == ')' && inList:
			inList = false
			i++
		case c == '<':
			end := strings.IndexByte(s[i+1:], '>')
			if end <= 0 {
				return nil, errBadIf
			}
			if inList && !not {
				out = append(out, s[i+1:i+1+end])
			}
			not = false
			i += end + 2
		case c == '[' && inList:
			end := strings.IndexByte(s[i+1:], ']')
			if end < 0 {
				return nil, errBadIf
			}
			not = false
			i += end + 2
		case inList && strings.HasPrefix(s[i:], "Not"):
			not = true
			i += 3
		default:
			return nil, errBadIf
		}
	}
	if inList {
		return nil, errBadIf
	}
	return out, nil
}
