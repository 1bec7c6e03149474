package meta

import (
	"context"

	"netdisk/vpath"
)

// StatWithParent returns the node at path and its parent's, each with
// whether it exists, in one indexed query: starting a write needs both, and a
// small upload should not pay two round trips through the reader pool for it.
// The root has no parent (parentFound false).
func (s *SQLStore) StatWithParent(ctx context.Context, uid int64, path string) (n Node, found bool, parent Node, parentFound bool, err error) {
	if err := ctx.Err(); err != nil {
		return n, false, parent, false, wrap("meta.Stat", path, err)
	}
	n, found, parent, parentFound, err = statPair(s.pointQuery(ctx), s.reader(), uid, path)
	return n, found, parent, parentFound, wrap("meta.Stat", path, err)
}

// statPair is StatWithParent through q (a reader, or a transaction).
func statPair(ctx context.Context, q querier, uid int64, path string) (n Node, found bool, parent Node, parentFound bool, err error) {
	pp := vpath.Parent(path)
	rows, err := q.QueryContext(ctx, `SELECT `+nodeCols+` FROM nodes WHERE user_id = ? AND path IN (?, ?)`, uid, path, pp)
	if err != nil {
		return n, false, parent, false, err
	}
	defer rows.Close()
	for rows.Next() {
		x, err := scanNode(rows)
		if err != nil {
			return n, false, parent, false, err
		}
		switch x.Path {
		case path:
			n, found = x, true
		case pp:
			parent, parentFound = x, true
		}
	}
	return n, found, parent, parentFound, rows.Err()
}
