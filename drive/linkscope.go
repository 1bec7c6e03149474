package drive

import (
	"context"
	"errors"
	"strings"

	"netdisk/errs"
	"netdisk/meta"
)

// A public link's view of its owner's tree: WithLink marks a request made
// through a link, and from then on every path the drive is given with the
// owner's id is a path in the link's view, whose root "/" is the linked
// node. The share resolver (shares.go) does the rest as for a share's
// entry: the path below the root is cleaned (no "..") and joined under the
// node's current path, results and errors come back in the view's terms,
// and writes are the owner's (their quota, trash, versions and locks).
//
// What a link adds: its permission decides every access (a read link
// refuses writes with ReadOnly, an upload-only link is refused anything
// here, having no view: it never lists nor serves); the root itself is
// never changed, removed, moved or replaced through the link (Permission);
// the owner's own share entries inside the linked folder show as the empty
// folders they are in the owner's tree (shares do not chain: a link never
// hands a third user's files on); and nothing but the owner's id is
// accepted, so no call made under the link reaches another tree.

type linkKey struct{}

// linkScope is what WithLink puts in the context.
type linkScope struct {
	owner int64
	m     meta.Mount // the root as a share's entry at "/" of the view
	view  bool       // the link may read (and, with m.Write, write)
}

// WithLink returns ctx for requests made through pl: paths given with pl's
// owner's id are read in the link's view (see above).
func WithLink(ctx context.Context, pl PublicLink) context.Context {
	s := &linkScope{owner: pl.Owner.ID, m: meta.Mount{
		Path: "/", UserID: pl.Owner.ID, ShareID: pl.ID, OwnerID: pl.Owner.ID, OwnerName: pl.Owner.Name,
		Target: pl.Root.ID, TargetDir: pl.Root.IsDir, TargetAt: pl.Root.Path,
		Write: pl.Perm == meta.LinkReadWrite,
	}}
	s.view = pl.Perm == meta.LinkRead || pl.Perm == meta.LinkReadWrite
	return context.WithValue(ctx, linkKey{}, s)
}

// resolveLink is resolve for a request made through a link.
func (d *Drive) resolveLink(ctx context.Context, op string, s *linkScope, uid int64, p string, a access) (context.Context, where, error) {
	ctx = context.WithValue(ctx, resolvedKey{}, true)
	switch {
	case uid != s.owner || !s.view:
		return ctx, where{}, errs.E(op, errs.Permission, p, errors.New("not reachable through this link"))
	case a == writeAccess && !s.m.Write:
		return ctx, where{}, errs.E(op, errs.ReadOnly, p, errors.New("the link is read-only"))
	case a == writeAccess && p == "/":
		return ctx, where{}, errs.E(op, errs.Permission, p, errors.New("the link's root cannot be changed through it"))
	}
	m := s.m
	return ctx, where{uid: s.owner, path: rebase(p, "/", m.TargetAt), m: &m, entry: p == "/", link: true}, nil
}

// rootOfLink refuses what would remove, move or replace a link's root.
func (w where) rootOfLink(op, p string) error {
	if w.link && w.entry {
		return errs.E(op, errs.Permission, p, errors.New("the link's root cannot be changed through it"))
	}
	return nil
}

// rebase maps p, at or below from (both clean), to the same place at or
// below to. When to is the end of from (a share's entry keeps the shared
// node's name; a link's root is "/"), the result is the end of p itself:
// a listing of thousands of entries maps without copying a path.
func rebase(p, from, to string) string {
	switch {
	case p == from:
		return to
	case from == to:
		return p
	case from == "/":
		return to + p
	case to == "/":
		return p[len(from):]
	case strings.HasSuffix(from, to):
		// to starts with "/": it ends from at a name's boundary.
		return p[len(from)-len(to):]
	}
	return to + p[len(from):]
}
