package drive

import (
	"context"
	"slices"
	"strings"

	"netdisk/errs"
	"netdisk/meta"
	"netdisk/vpath"
)

// Tree returns the nodes below directory p in path order, at most limit+1 of
// them.
func (d *Drive) Tree(ctx context.Context, uid int64, p string, limit int) ([]meta.Node, error) {
	p, err := clean("drive.Tree", p)
	if err != nil {
		return nil, err
	}
	ctx, w, err := d.resolve(ctx, "drive.Tree", uid, p, readAccess)
	if err != nil {
		return nil, err
	}
	ns, err := d.meta.Tree(ctx, w.uid, w.path, limit)
	if err != nil {
		return nil, w.err(err)
	}
	ns = d.withEntries(ctx, w, w.nodes(ns))
	// The user's entries below p stand for the shared folders: their
	// contents are part of the walk, in the user's terms. The owner's tree
	// is read without resolving again, so an entry the owner has in there
	// is the empty folder it is in their tree: no walk loops through
	// shares given back and forth.
	grew := false
	for _, m := range w.mounts {
		if !m.Live() || !m.TargetDir || !vpath.IsBelow(m.Path, p) && p != "/" {
			continue
		}
		below, err := d.meta.Tree(ctx, m.OwnerID, m.TargetAt, limit)
		if errs.Is(err, errs.NotFound) {
			continue // gone meanwhile
		}
		if err != nil {
			return nil, err
		}
		ns = append(ns, where{m: &m}.nodes(below)...)
		grew = true
	}
	if grew {
		slices.SortFunc(ns, func(a, b meta.Node) int { return strings.Compare(a.Path, b.Path) })
		if len(ns) > limit+1 {
			ns = ns[:limit+1] // more than limit: the caller's signal
		}
	}
	return ns, nil
}

// PropsUnder returns the dead properties of p and its children (or its whole
// subtree when recursive), keyed by node id.
func (d *Drive) PropsUnder(ctx context.Context, uid int64, p string, recursive bool) (map[int64][]meta.Prop, error) {
	p, err := clean("drive.PropsUnder", p)
	if err != nil {
		return nil, err
	}
	ctx, w, err := d.resolve(ctx, "drive.PropsUnder", uid, p, readAccess)
	if err != nil {
		return nil, err
	}
	ps, err := d.meta.PropsUnder(ctx, w.uid, w.path, recursive)
	return ps, w.err(err)
}

// ListDir returns the node at p and, if it is a directory, its children.
func (d *Drive) ListDir(ctx context.Context, uid int64, p string) (meta.Node, []meta.Node, error) {
	p, err := clean("drive.ListDir", p)
	if err != nil {
		return meta.Node{}, nil, err
	}
	ctx, w, err := d.resolve(ctx, "drive.ListDir", uid, p, readAccess)
	if err != nil {
		return meta.Node{}, nil, err
	}
	n, ns, err := d.meta.ListDir(ctx, w.uid, w.path)
	if err != nil {
		return meta.Node{}, nil, w.err(err)
	}
	return w.node(n), d.withEntries(ctx, w, w.nodes(ns)), nil
}

// Writes tells which of the paths a listing returned the asker may
// change: all of their own, none in a read-only share or through a read
// link. It asks nothing of the store.
type Writes struct {
	all, none bool
	readOnly  []string // the asker's entries of read-only shares
}

// Allowed reports whether the asker may change the node at p (a path the
// listing returned, in their terms).
func (w Writes) Allowed(p string) bool {
	switch {
	case w.all:
		return true
	case w.none:
		return false
	}
	for _, e := range w.readOnly {
		if p == e || vpath.IsBelow(p, e) {
			return false
		}
	}
	return true
}

// writes is what w's asker may change.
func (w where) writes() Writes {
	if w.m != nil {
		return Writes{all: w.m.Write, none: !w.m.Write}
	}
	var ro []string
	for _, m := range w.mounts {
		if !m.Write {
			ro = append(ro, m.Path)
		}
	}
	return Writes{all: len(ro) == 0, readOnly: ro}
}

// ListDirProps is ListDir and, with props, the dead properties of the node
// and its children keyed by node id, resolved once: the two questions of
// a Depth 1 PROPFIND, without a second resolution through the user's
// shares. Writes says which of the nodes the asker may change.
func (d *Drive) ListDirProps(ctx context.Context, uid int64, p string, props bool) (meta.Node, []meta.Node, map[int64][]meta.Prop, Writes, error) {
	p, err := clean("drive.ListDirProps", p)
	if err != nil {
		return meta.Node{}, nil, nil, Writes{}, err
	}
	ctx, w, err := d.resolve(ctx, "drive.ListDirProps", uid, p, readAccess)
	if err != nil {
		return meta.Node{}, nil, nil, Writes{}, err
	}
	n, ns, err := d.meta.ListDir(ctx, w.uid, w.path)
	if err != nil {
		return meta.Node{}, nil, nil, Writes{}, w.err(err)
	}
	var ps map[int64][]meta.Prop
	switch {
	case !props:
	case len(ns) == 0:
		var own []meta.Prop
		if own, err = d.meta.Props(ctx, n.ID); err == nil {
			ps = map[int64][]meta.Prop{n.ID: own}
		}
	default:
		ps, err = d.meta.PropsUnder(ctx, w.uid, w.path, false)
	}
	if err != nil {
		return meta.Node{}, nil, nil, Writes{}, w.err(err)
	}
	return w.node(n), d.withEntries(ctx, w, w.nodes(ns)), ps, w.writes(), nil
}

// WritesAt is the Writes of a listing of p, for the nodes at and below it.
func (d *Drive) WritesAt(ctx context.Context, uid int64, p string) (Writes, error) {
	p, err := clean("drive.WritesAt", p)
	if err != nil {
		return Writes{}, err
	}
	_, w, err := d.resolve(ctx, "drive.WritesAt", uid, p, readAccess)
	if err != nil {
		return Writes{}, err
	}
	return w.writes(), nil
}
