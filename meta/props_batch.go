package meta

import (
	"context"
	"database/sql"
	"time"

	"netdisk/errs"
)

// listCols are the columns scanFast reads (user_id is known to the caller).
const listCols = `id, path, is_dir, size, mode, mtime_ns, file_hash, ifnull(content_md5, ''), ifnull(content_sha1, ''), ifnull(link_target, ''), tree_seq`

// scanFast scans listCols into n through plain int64s: database/sql converts
// an INTEGER into a uint32 by formatting and re-parsing it, which dominated a
// 10,000-row listing.
func scanFast(rows *sql.Rows, uid int64, n *Node) error {
	var isDir, mode, mtime int64
	if err := rows.Scan(&n.ID, &n.Path, &isDir, &n.Size, &mode, &mtime, &n.FileHash, &n.MD5, &n.SHA1, &n.Target, &n.TreeSeq); err != nil {
		return err
	}
	n.UserID, n.IsDir, n.Mode, n.ModTime = uid, isDir != 0, uint32(mode), time.Unix(0, mtime)
	return nil
}

// ListDir returns the node at dir and, when it is a directory, its children
// by name: what a PROPFIND of Depth 1 needs, in two queries.
func (s *SQLStore) ListDir(ctx context.Context, uid int64, dir string) (Node, []Node, error) {
	const op = "meta.ListDir"
	self, err := s.Stat(ctx, uid, dir)
	if err != nil || !self.IsDir {
		return self, nil, err
	}
	rows, err := s.r.QueryContext(ctx, listDirQuery, uid, dir)
	if err != nil {
		return self, nil, wrap(op, dir, err)
	}
	defer rows.Close()
	out := make([]Node, 0, 64)
	for rows.Next() {
		out = append(out, Node{})
		if err := scanFast(rows, uid, &out[len(out)-1]); err != nil {
			return self, nil, wrap(op, dir, err)
		}
	}
	return self, out, wrap(op, dir, rows.Err())
}

// Tree returns the nodes strictly below dir in path order, at most limit+1 of
// them (so a caller can tell "more than limit" without reading everything).
// dir itself must exist and be a directory.
func (s *SQLStore) Tree(ctx context.Context, uid int64, dir string, limit int) ([]Node, error) {
	const op = "meta.Tree"
	d, err := s.Stat(ctx, uid, dir)
	if err != nil {
		return nil, err
	}
	if !d.IsDir {
		return nil, errs.E(op, errs.NotDir, dir, nil)
	}
	cond, args := subtree(dir)
	rows, err := s.r.QueryContext(ctx, `SELECT `+listCols+` FROM nodes WHERE user_id = ? AND `+cond+` ORDER BY path LIMIT ?`,
		append(append([]any{uid}, args...), limit+1)...)
	if err != nil {
		return nil, wrap(op, dir, err)
	}
	defer rows.Close()
	var out []Node
	for rows.Next() {
		out = append(out, Node{})
		if err := scanFast(rows, uid, &out[len(out)-1]); err != nil {
			return nil, wrap(op, dir, err)
		}
	}
	return out, wrap(op, dir, rows.Err())
}

// propsChildrenQuery selects the dead properties of a folder (user, path)
// and of its children (user, path): two index searches, not "path = ? OR
// parent = ?", which SQLite answers by scanning every node of the user. The
// cost must follow the folder's size, not the user's.
const propsChildrenQuery = `SELECT p.node_id, p.ns, p.name, p.value, p.lang FROM props p WHERE p.node_id IN (
		SELECT id FROM nodes WHERE user_id = ? AND parent = ?
		UNION ALL SELECT id FROM nodes WHERE user_id = ? AND path = ?)
	ORDER BY p.node_id, p.ns, p.name`

// listDirQuery selects a folder's (user, path) children by name; migration
// 004's covering index answers it without reading the table.
const listDirQuery = `SELECT ` + listCols + ` FROM nodes WHERE user_id = ? AND parent = ? ORDER BY name`

// PropsUnder returns, by node id, the dead properties of dir itself and of its
// children (recursive false) or of its whole subtree (recursive true), in one
// query: a PROPFIND of a large folder must not cost a query per entry.
func (s *SQLStore) PropsUnder(ctx context.Context, uid int64, dir string, recursive bool) (map[int64][]Prop, error) {
	const op = "meta.PropsUnder"
	var q string
	var args []any
	if recursive {
		cond, a := subtree(dir)
		q = `SELECT p.node_id, p.ns, p.name, p.value, p.lang FROM nodes n JOIN props p ON p.node_id = n.id
			WHERE n.user_id = ? AND (n.path = ? OR (` + cond + `)) ORDER BY p.node_id, p.ns, p.name`
		args = append([]any{uid, dir}, a...)
	} else {
		q, args = propsChildrenQuery, []any{uid, dir, uid, dir}
	}
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, wrap(op, dir, err)
	}
	defer rows.Close()
	out := map[int64][]Prop{}
	for rows.Next() {
		var id int64
		var p Prop
		if err := rows.Scan(&id, &p.Space, &p.Local, &p.InnerXML, &p.Lang); err != nil {
			return nil, wrap(op, dir, err)
		}
		out[id] = append(out[id], p)
	}
	return out, wrap(op, dir, rows.Err())
}
