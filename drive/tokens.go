package drive

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/crypto/bcrypt"

	"netdisk/errs"
	"netdisk/meta"
)

// App passwords (device tokens). A token is a random secret that signs its
// user in wherever a password does (WebDAV, the API, a mount, an agent), so
// a device never holds the account's password and one device can be cut
// off alone. The store keeps only its SHA-256: the secret has 256 bits of
// entropy, so a slow hash would add nothing but cost on every request.
//
// A token is looked up in the store on every use, never cached: a
// revocation (or the user's deletion) holds on every node sharing the store
// from the next request. A token cannot change the password nor manage
// tokens (callers check TokenOf): a stolen device must not be able to lock
// its owner out or mint itself a successor.

// TokenPrefix starts every token, so a secret is recognisable as one (by
// secret scanners, and by the server, which then asks the store by hash
// instead of running bcrypt).
const TokenPrefix = "ndt_"

// tokenTouchEvery is how stale a token's recorded last use may get before a
// use writes it again: `token ls` shows days, not seconds, and a mount's
// requests must not each cost a write.
const tokenTouchEvery = time.Minute

// LooksLikeToken reports whether secret has the shape of a token.
func LooksLikeToken(secret string) bool {
	return strings.HasPrefix(secret, TokenPrefix) && len(secret) == len(TokenPrefix)+43
}

func tokenHash(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// ValidTokenName reports whether name is acceptable for a token: 1 to 64
// bytes of printable text (a device's name: "laptop", "backup agent").
func ValidTokenName(name string) error {
	if name == "" || len(name) > 64 || !utf8.ValidString(name) {
		return errs.Errorf("drive.ValidTokenName", errs.Invalid, "token name must be 1 to 64 characters")
	}
	for _, r := range name {
		if !unicode.IsPrint(r) {
			return errs.Errorf("drive.ValidTokenName", errs.Invalid, "token name %q: only printable characters", name)
		}
	}
	return nil
}

// AddToken makes user uid a new token called name and returns its secret,
// which exists nowhere else: it cannot be shown again. A ctx signed in by
// a token is Permission (RefuseToken). A name the user
// already gave a token is Exists.
func (d *Drive) AddToken(ctx context.Context, uid int64, name string) (string, meta.AppToken, error) {
	if err := RefuseToken(ctx, "drive.AddToken", "make tokens"); err != nil {
		return "", meta.AppToken{}, err
	}
	if err := ValidTokenName(name); err != nil {
		return "", meta.AppToken{}, err
	}
	b := make([]byte, 32)
	rand.Read(b) // crypto/rand.Read never fails (it panics if the OS cannot provide)
	secret := TokenPrefix + base64.RawURLEncoding.EncodeToString(b)
	t := meta.AppToken{TokenHash: tokenHash(secret), UserID: uid, Name: name, Created: d.now()}
	if err := d.meta.CreateAppToken(ctx, t); err != nil {
		return "", meta.AppToken{}, err
	}
	return secret, t, nil
}

// Tokens lists user uid's tokens by name.
func (d *Drive) Tokens(ctx context.Context, uid int64) ([]meta.AppToken, error) {
	return d.meta.AppTokens(ctx, uid)
}

// RemoveToken revokes (not when ctx is signed in by a token: RefuseToken) user uid's token called name, on every node at once;
// NotFound when they have none by that name.
func (d *Drive) RemoveToken(ctx context.Context, uid int64, name string) error {
	if err := RefuseToken(ctx, "drive.RemoveToken", "revoke tokens"); err != nil {
		return err
	}
	return d.meta.DeleteAppToken(ctx, uid, name)
}

// AuthenticateToken signs user name in with a token: ok is false when
// secret is not a live token of that user (a token of another user is no
// token of this one), and then the caller checks it as a password (which
// counts a failure). It never runs bcrypt; it reads the store once, and
// records the use at most once a minute. The token's name is returned for
// TokenOf.
func (d *Drive) AuthenticateToken(ctx context.Context, name, secret string) (u meta.User, tokenName string, ok bool) {
	if !LooksLikeToken(secret) {
		return meta.User{}, "", false
	}
	t, u, err := d.meta.AppTokenUser(ctx, tokenHash(secret))
	if err != nil {
		if !errs.Is(err, errs.NotFound) {
			d.log.Warn("auth: app token look-up", "err", err)
		}
		return meta.User{}, "", false
	}
	if !strings.EqualFold(u.Name, name) {
		return meta.User{}, "", false
	}
	if now := d.now(); now.Sub(t.Last) >= tokenTouchEvery {
		// A use that cannot be recorded only makes `token ls` older: the
		// request is still the user's.
		if err := d.meta.TouchAppToken(ctx, t.TokenHash, now); err != nil {
			d.log.Warn("auth: cannot record an app token's use", "err", err)
		}
	}
	return u, t.Name, true
}

type tokenKey struct{}

// WithToken marks ctx as signed in by the token called name (the server
// does, for the request's handlers).
func WithToken(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, tokenKey{}, name)
}

// TokenOf tells whether ctx was signed in by a token, and which.
func TokenOf(ctx context.Context) (string, bool) {
	name, ok := ctx.Value(tokenKey{}).(string)
	return name, ok
}

// RefuseToken is Permission (403) when ctx was signed in by a token: what
// the caller guards (the password, the tokens) needs the password.
func RefuseToken(ctx context.Context, op, what string) error {
	if _, ok := TokenOf(ctx); ok {
		return errs.Errorf(op, errs.Permission, "an app token cannot %s: sign in with your password", what)
	}
	return nil
}

// ChangePassword sets user uid's password to newPassword once oldPassword
// proves it is theirs (Permission otherwise: a signed-in browser left
// open, or a token, must not be enough to take the account). It ends the
// user's web sessions on every node and the old password's remembered
// credentials (this node's at once; other nodes confirm theirs against a
// shared store on every use: Config.SharedMeta); app tokens stay.
func (d *Drive) ChangePassword(ctx context.Context, uid int64, oldPassword, newPassword string) error {
	const op = "drive.ChangePassword"
	if err := RefuseToken(ctx, op, "change the password"); err != nil {
		return err
	}
	u, err := d.meta.UserByID(ctx, uid)
	if err != nil {
		return err
	}
	if bcrypt.CompareHashAndPassword([]byte(u.PassHash), []byte(oldPassword)) != nil {
		return errs.E(op, errs.Permission, "", fmt.Errorf("the current password is wrong"))
	}
	h, err := HashPassword(newPassword)
	if err != nil {
		return err
	}
	defer d.staleAuth()
	return d.meta.SetPassword(ctx, uid, h)
}
