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
	return d.meta.Tree(ctx, uid, p, limit)
}

// PropsUnder returns the dead properties of p and its children (or its whole
// subtree when recursive), keyed by node id.
func (d *Drive) PropsUnder(ctx context.Context, uid int64, p string, recursive bool) (map[int64][]meta.Prop, error) {
	p, err := clean("drive.PropsUnder", p)
	if err != nil {
		return nil, err
	}
	return d.meta.PropsUnder(ctx, uid, p, recursive)
}

// ListDir returns the node at p and, if it is a directory, its children.
func (d *Drive) ListDir(ctx context.Context, uid int64, p string) (meta.Node, []meta.Node, error) {
	p, err := clean("drive.ListDir", p)
	if err != nil {
		return meta.Node{}, nil, err
	}
	return d.meta.ListDir(ctx, uid, p)
}
