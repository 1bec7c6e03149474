package drive

import (
	"context"

	"netdisk/meta"
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
	return d.withEntries(ctx, w, w.nodes(ns)), nil
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
