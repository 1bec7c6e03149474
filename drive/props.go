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
