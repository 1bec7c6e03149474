package drive

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"time"

	"golang.org/x/crypto/bcrypt"

	"netdisk/errs"
	"netdisk/meta"
)

// Public links. A link lets whoever holds its token reach one node of its
// owner's tree (a file, or a folder and everything below it) without an
// account, with the link's permission. The token is 192 random bits; the
// store keeps only its SHA-256 (a slow hash would add nothing to a secret
// that cannot be guessed) and a password only as a bcrypt hash, as an
// account's. A link is looked up in the store on every request, never
// cached: a revocation holds on every node sharing the store from the next
// request, on a connection already open too.
//
// Whatever makes a token useless (unknown, revoked, expired, its downloads
// used up, its node gone) is the one answer ErrNoLink, so that nobody can
// learn which tokens exist or existed.

// ErrNoLink is the one answer for a token that reaches nothing.
var ErrNoLink = errs.E("drive.Link", errs.NotFound, "", errors.New("no such link"))

// linkTouchEvery is how stale a link's recorded last use may get before a
// use writes it again: `share ls` shows minutes, and a folder page's
// requests must not each cost a write.
const linkTouchEvery = time.Minute

// LinkOptions are what the owner chooses for a new link.
type LinkOptions struct {
	Password     string    // "" for none
	Expires      time.Time // zero: never
	Perm         meta.LinkPerm
	MaxDownloads int64 // 0: no bound
}

// PublicLink is a live link as resolved from its token.
type PublicLink struct {
	meta.Link
	Owner meta.User
	Root  meta.Node // the linked node, where it is now
}

// ValidLinkToken reports whether token has the shape of a link token, so
// that what cannot be one costs no look-up.
func ValidLinkToken(token string) bool {
	if len(token) != 32 {
		return false
	}
	_, err := base64.RawURLEncoding.DecodeString(token)
	return err == nil
}

// CreateLink makes a public link to user uid's node at p and returns its
// token, which exists nowhere else: it cannot be shown again. Only the
// owner links a node (Permission inside a share uid received). Upload-only
// and read-write links are for folders (Invalid for a file); an expiry
// not in the future and a negative download bound are Invalid.
func (d *Drive) CreateLink(ctx context.Context, uid int64, p string, o LinkOptions) (string, meta.Link, error) {
	const op = "drive.CreateLink"
	p, err := clean(op, p)
	if err != nil {
		return "", meta.Link{}, err
	}
	if _, err := d.ownerOnly(ctx, op, uid, p); err != nil {
		return "", meta.Link{}, err
	}
	n, err := d.Stat(ctx, uid, p)
	if err != nil {
		return "", meta.Link{}, err
	}
	switch o.Perm {
	case meta.LinkRead:
	case meta.LinkUpload, meta.LinkReadWrite:
		if !n.IsDir {
			return "", meta.Link{}, errs.Errorf(op, errs.Invalid, "an %s link is for a folder", o.Perm)
		}
	default:
		return "", meta.Link{}, errs.Errorf(op, errs.Invalid, "unknown link permission %d", o.Perm)
	}
	if n.IsSymlink() {
		return "", meta.Link{}, errs.Errorf(op, errs.Invalid, "a symbolic link cannot be shared by a link")
	}
	now := d.now()
	if !o.Expires.IsZero() && !o.Expires.After(now) {
		return "", meta.Link{}, errs.Errorf(op, errs.Invalid, "the expiry %s is not in the future", o.Expires.UTC().Format(time.RFC3339))
	}
	if o.MaxDownloads < 0 {
		return "", meta.Link{}, errs.Errorf(op, errs.Invalid, "a negative download limit")
	}
	l := meta.Link{UserID: uid, NodeID: n.ID, Perm: o.Perm, Expires: o.Expires, MaxDownloads: o.MaxDownloads, Created: now}
	if o.Password != "" {
		if l.PassHash, err = HashPassword(o.Password); err != nil {
			return "", meta.Link{}, err
		}
	}
	b := make([]byte, 24)
	rand.Read(b) // crypto/rand.Read never fails (it panics if the OS cannot provide)
	token := base64.RawURLEncoding.EncodeToString(b)
	l.TokenHash = tokenHash(token)
	l, err = d.meta.CreateLink(ctx, l)
	if err != nil {
		return "", meta.Link{}, err
	}
	return token, l, nil
}

// Links lists user uid's links, oldest first, with where their nodes are now.
func (d *Drive) Links(ctx context.Context, uid int64) ([]meta.Link, error) {
	return d.meta.UserLinks(ctx, uid)
}

// RevokeLink ends user uid's link id on every node at once; NotFound when
// they have none by that id.
func (d *Drive) RevokeLink(ctx context.Context, uid, id int64) error {
	return d.meta.DeleteLink(ctx, uid, id)
}

// ResolveLink finds the live link of token with its owner and node, on the
// drive's clock; ErrNoLink for anything else. It records the use at most
// once a minute. The password, if the link has one, is the caller's to
// check (LinkPasswordOK) before it serves anything.
func (d *Drive) ResolveLink(ctx context.Context, token string) (PublicLink, error) {
	if !ValidLinkToken(token) {
		return PublicLink{}, ErrNoLink
	}
	h := tokenHash(token)
	l, err := d.meta.LinkByToken(ctx, h)
	if errs.Is(err, errs.NotFound) {
		return PublicLink{}, ErrNoLink
	}
	if err != nil {
		return PublicLink{}, err
	}
	// The index found the row by the hash; comparing again in constant
	// time keeps the last step of the decision free of timing too.
	if subtle.ConstantTimeCompare([]byte(h), []byte(l.TokenHash)) != 1 {
		return PublicLink{}, ErrNoLink
	}
	now := d.now()
	if !l.Expires.IsZero() && !now.Before(l.Expires) {
		return PublicLink{}, ErrNoLink
	}
	if l.MaxDownloads > 0 && l.Downloads >= l.MaxDownloads {
		return PublicLink{}, ErrNoLink
	}
	owner, err := d.meta.UserByID(ctx, l.UserID)
	if errs.Is(err, errs.NotFound) {
		return PublicLink{}, ErrNoLink
	}
	if err != nil {
		return PublicLink{}, err
	}
	root, err := d.meta.NodeByID(ctx, l.UserID, l.NodeID)
	if errs.Is(err, errs.NotFound) {
		return PublicLink{}, ErrNoLink
	}
	if err != nil {
		return PublicLink{}, err
	}
	if now.Sub(l.Last) >= linkTouchEvery {
		err := d.meta.UseLink(ctx, l.ID, now, false)
		if errs.Is(err, errs.NotFound) {
			return PublicLink{}, ErrNoLink // revoked since the read
		}
		if err != nil {
			// A use that cannot be recorded only makes `share ls` older.
			d.log.Warn("link: cannot record a use", "link", l.ID, "err", err)
		}
	}
	return PublicLink{Link: l, Owner: owner, Root: root}, nil
}

// LinkPasswordOK reports whether password opens l: any does for a link
// without one. It runs bcrypt; callers throttle failures.
func LinkPasswordOK(l meta.Link, password string) bool {
	if l.PassHash == "" {
		return true
	}
	return bcrypt.CompareHashAndPassword([]byte(l.PassHash), []byte(password)) == nil
}

// CountLinkDownload counts one download through l before it is served:
// ErrNoLink when its downloads are used up (two racing for the last one
// cannot both have it) or it is gone.
func (d *Drive) CountLinkDownload(ctx context.Context, l meta.Link) error {
	err := d.meta.UseLink(ctx, l.ID, d.now(), true)
	if errs.Is(err, errs.NotFound) {
		return ErrNoLink
	}
	return err
}

// LinkChange is what UpdateLink changes; a nil field stays as it is.
type LinkChange struct {
	Password *string        // "" removes the password
	Expires  *time.Time     // the zero time removes the expiry
	Perm     *meta.LinkPerm // upload-only and read-write only for a folder
}

// UpdateLink changes user uid's link id as c says, with CreateLink's rules
// (an expiry not in the future, or a folder's permission on a file, is
// Invalid); the token stays. NotFound when uid has no link by that id.
func (d *Drive) UpdateLink(ctx context.Context, uid, id int64, c LinkChange) (meta.Link, error) {
	const op = "drive.UpdateLink"
	ls, err := d.meta.UserLinks(ctx, uid)
	if err != nil {
		return meta.Link{}, err
	}
	var l meta.Link
	for _, x := range ls {
		if x.ID == id {
			l = x
		}
	}
	if l.ID == 0 {
		return meta.Link{}, errs.E(op, errs.NotFound, "", errors.New("no such link"))
	}
	if c.Perm != nil {
		switch *c.Perm {
		case meta.LinkRead:
		case meta.LinkUpload, meta.LinkReadWrite:
			n, err := d.meta.NodeByID(ctx, uid, l.NodeID)
			if err != nil {
				return meta.Link{}, err
			}
			if !n.IsDir {
				return meta.Link{}, errs.Errorf(op, errs.Invalid, "an %s link is for a folder", *c.Perm)
			}
		default:
			return meta.Link{}, errs.Errorf(op, errs.Invalid, "unknown link permission %d", *c.Perm)
		}
		l.Perm = *c.Perm
	}
	if c.Expires != nil {
		if !c.Expires.IsZero() && !c.Expires.After(d.now()) {
			return meta.Link{}, errs.Errorf(op, errs.Invalid, "the expiry %s is not in the future", c.Expires.UTC().Format(time.RFC3339))
		}
		l.Expires = *c.Expires
	}
	if c.Password != nil {
		l.PassHash = ""
		if *c.Password != "" {
			if l.PassHash, err = HashPassword(*c.Password); err != nil {
				return meta.Link{}, err
			}
		}
	}
	return d.meta.UpdateLink(ctx, uid, id, l)
}
