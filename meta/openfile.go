package meta

import (
	"context"
	"database/sql"

	"netdisk/errs"
)

// openFileSQL is OpenFile's one statement.
const openFileSQL = `SELECT ` + openFileCols + `, fc.idx, c.id, c.sha256, c.md5, c.size, d.data
	FROM nodes n
	LEFT JOIN file_chunks fc ON fc.node_id = n.id
	LEFT JOIN chunks c ON c.id = fc.chunk_id
	LEFT JOIN chunk_data d ON d.chunk_id = c.id
	WHERE n.user_id = ? AND n.path = ?
	ORDER BY fc.idx`

// OpenFile returns the node at path and, for a file, its chunks in order
// with the bytes of those kept inline (Chunk.Data), in one statement: a
// small GET needs all three, and each statement is a round trip through the
// reader pool (and, on SQLite, through cgo) that costs more than the lookup
// itself. The node's columns repeat on every chunk's row; for a folder, a
// link or an empty file the one row has no chunk.
//
// The reader pool, not the idle writer (reader()): GETs come many at once,
// and the writer is one connection they would queue on.
func (s *SQLStore) OpenFile(ctx context.Context, uid int64, path string) (Node, []FileChunk, error) {
	const op = "meta.OpenFile"
	if err := ctx.Err(); err != nil {
		return Node{}, nil, wrap(op, path, err)
	}
	rows, err := s.r.QueryContext(s.pointQuery(ctx), openFileSQL, uid, path)
	if err != nil {
		return Node{}, nil, wrap(op, path, err)
	}
	defer rows.Close()
	var (
		n     Node
		found bool
		out   []FileChunk
		off   int64
	)
	for rows.Next() {
		var (
			idx, id, size sql.NullInt64
			sha, md5      sql.NullString
			data          []byte
		)
		x, err := scanNode(rowFunc(func(dest ...any) error {
			return rows.Scan(append(dest, &idx, &id, &sha, &md5, &size, &data)...)
		}))
		if err != nil {
			return Node{}, nil, wrap(op, path, err)
		}
		n, found = x, true
		if !idx.Valid {
			continue
		}
		fc := FileChunk{Index: idx.Int64, Offset: off, Chunk: Chunk{ID: id.Int64, SHA256: sha.String, MD5: md5.String, Size: size.Int64, Data: data}}
		off += fc.Size
		out = append(out, fc)
	}
	if err := rows.Err(); err != nil {
		return Node{}, nil, wrap(op, path, err)
	}
	if !found {
		return Node{}, nil, errs.E(op, errs.NotFound, path, nil)
	}
	return n, out, nil
}

// openFileCols are nodeCols of the nodes aliased n (the joined tables have
// columns of the same names).
const openFileCols = `n.id, n.user_id, n.path, n.is_dir, n.size, n.mode, n.mtime_ns, n.file_hash, ifnull(n.content_md5, ''), ifnull(n.content_sha1, ''), ifnull(n.link_target, ''), n.tree_seq`

// rowFunc is a rowScanner made of a function: it lets scanNode read the
// node's columns of a row that carries more.
type rowFunc func(dest ...any) error

func (f rowFunc) Scan(dest ...any) error { return f(dest...) }
