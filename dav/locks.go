package dav

import (
	"errors"
	"net/http"
	"net/url"
	"strings"

	"netdisk/davlock"
	"netdisk/drive"
	"netdisk/errs"
	"netdisk/vpath"
)

// confirmWrite evaluates the lock table and the If header for a request that
// modifies the named resources (the Request-URI's and, for COPY/MOVE, the
// destination). It returns an error of kind Locked (423) when a locked
// resource is modified without one of its lock tokens in the If header,
// Precondition (412) when the If header is false, Invalid (400) when it is
// malformed. Untagged If lists apply to the Request-URI (RFC 4918 §10.4).
//
// What counts as modified follows r.Method: the source of a COPY is only
// read (passing it is fine, it is skipped); DELETE, MOVE and the destination
// of COPY remove or replace whole subtrees, so locks on members count too;
// adding or removing a member also needs the token of a depth-0 lock on the
// parent collection (RFC 4918 §7.5). Only locked resources need tokens: a
// MOVE of a locked file onto an unlocked name needs just the source's
// (golang/go#43556).
func (h *Handler) confirmWrite(r *http.Request, fs *FS, names ...string) error {
	const op = "dav.confirmWrite"
	ih, hasIf, err := requestIf(r)
	if err != nil {
		return err
	}
	reqPath := ""
	if p, ok := strings.CutPrefix(r.URL.Path, h.Prefix); ok {
		reqPath, _ = vpath.Clean(p)
	}
	if reqPath == "" && len(names) > 0 {
		reqPath, _ = vpath.Clean(names[0])
	}
	// The If header first: a false one is 412 even on a locked resource
	// (what Apache does and litmus expects); a true one must still carry
	// the tokens of the locks in the way, else 423.
	if hasIf && reqPath != "" && !ih.eval(reqPath, h.ifEnv(r, fs)) {
		return errs.E(op, errs.Precondition, reqPath, errors.New("If header conditions failed"))
	}
	// The one rule of the lock table; the drive applies it again (with the
	// same tokens, from the request's context) to whatever it changes.
	tokens := ih.tokens()
	deep := r.Method == http.MethodDelete || r.Method == "MOVE" || r.Method == "COPY"
	for _, n := range names {
		name, err := vpath.Clean(n)
		if err != nil {
			return errs.E(op, errs.Invalid, n, err)
		}
		if r.Method == "COPY" && name == reqPath {
			continue
		}
		pl, err := h.lockPlace(r.Context(), fs, name)
		if err != nil {
			return err
		}
		if pl.Entry && (r.Method == http.MethodDelete || r.Method == "MOVE") {
			// Removing or moving the user's entry of a share changes only
			// their tree (the drive leaves the shared node alone).
			pl = drive.LockPlace{UID: fs.UID, Path: name}
		}
		membership, err := h.changesMembership(r, fs, name, pl)
		if err != nil {
			return err
		}
		t := davlock.Target{Path: pl.Path, Deep: deep, Membership: membership}
		if err := davlock.Check(h.Locks, pl.UID, tokens, t); err != nil {
			return pl.Err(err)
		}
	}
	return nil
}

// requestIf parses the request's If header(s); has is false when there is none.
func requestIf(r *http.Request) (ih ifHeader, has bool, err error) {
	vs := r.Header.Values("If")
	if len(vs) == 0 {
		return ifHeader{}, false, nil
	}
	ih, err = parseIf(strings.Join(vs, " "))
	if err != nil {
		return ifHeader{}, true, errs.E("dav.If", errs.Invalid, "", err)
	}
	return ih, true, nil
}

func lockedError(name, root string) error {
	return errs.E("dav.confirmWrite", errs.Locked, name, errors.New("locked (lock on "+root+"); submit its lock token in an If header"))
}

// changesMembership reports whether the request adds or removes name (at
// pl in the lock table) as a member of its parent collection.
func (h *Handler) changesMembership(r *http.Request, fs *FS, name string, pl drive.LockPlace) (bool, error) {
	switch r.Method {
	case http.MethodDelete, "MKCOL", "MOVE", "COPY":
		return true, nil
	case http.MethodPut:
		// Membership matters only under a depth-0 lock on the parent
		// (davlock.Check): without one, the answer cannot change anything
		// and a small PUT is spared a lookup.
		if !h.parentLocked(pl) {
			return false, nil
		}
		_, err := fs.D.Stat(r.Context(), fs.UID, name)
		return errs.Is(err, errs.NotFound), nil
	}
	return false, nil
}

// parentLocked reports whether the parent of pl carries a depth-0 lock.
func (h *Handler) parentLocked(pl drive.LockPlace) bool {
	parent := vpath.Parent(pl.Path)
	if h.Locks == nil || parent == "" {
		return false
	}
	for _, l := range h.Locks.Covering(pl.UID, parent) {
		if l.Root == parent && !l.Infinite {
			return true
		}
	}
	return false
}

// confirmMembers refuses adding or removing name when its parent carries a
// depth-0 lock whose token was not submitted; depth-infinity locks already
// cover name itself.
func (h *Handler) confirmMembers(r *http.Request, fs *FS, ih ifHeader, name string) error {
	pl, err := h.lockPlace(r.Context(), fs, name)
	if err != nil {
		return err
	}
	parent := vpath.Parent(pl.Path)
	if parent == "" {
		return nil
	}
	var direct []davlock.Lock
	for _, l := range h.Locks.Covering(pl.UID, parent) {
		if l.Root == parent && !l.Infinite {
			direct = append(direct, l)
		}
	}
	if len(direct) == 0 {
		return nil
	}
	for _, t := range ih.tokens() {
		for _, l := range direct {
			if l.Token == t {
				return nil
			}
		}
	}
	return lockedError(name, vpath.Parent(name))
}

// ifEnv binds If header evaluation to a request: its host, the user's
// drive and lock table.
func (h *Handler) ifEnv(r *http.Request, fs *FS) ifEnv { return reqIfEnv{h: h, r: r, fs: fs} }

type reqIfEnv struct {
	h  *Handler
	r  *http.Request
	fs *FS
}

// resolve maps a Resource-Tag (absolute URL or absolute path) to a path in
// the user's drive; a tag on another host or outside the prefix names
// nothing here.
func (e reqIfEnv) resolve(tag string) (string, bool) {
	u, err := url.Parse(tag)
	if err != nil {
		return "", false
	}
	if u.Host != "" && !strings.EqualFold(u.Host, e.r.Host) {
		return "", false
	}
	p, ok := strings.CutPrefix(u.Path, e.h.Prefix)
	if !ok || (p != "" && p[0] != '/') {
		return "", false
	}
	c, err := vpath.Clean(p)
	return c, err == nil
}

func (e reqIfEnv) tokenHolds(token, name string) bool {
	pl, err := e.h.lockPlace(e.r.Context(), e.fs, name)
	if err != nil {
		return false
	}
	return e.h.Locks.Holds(pl.UID, token, pl.Path)
}

func (e reqIfEnv) etag(name string) (string, bool) {
	n, err := e.fs.D.Stat(e.r.Context(), e.fs.UID, name)
	if err != nil {
		return "", false
	}
	return ETag(n), true
}
