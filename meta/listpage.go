package meta

import (
	"context"

	"netdisk/errs"
)

// listPageQuery selects a folder's children after a name, by name: the
// same covering index as listDirQuery, entered at the cursor, so a page
// costs its own rows whatever page it is.
const listPageQuery = `SELECT ` + listCols + ` FROM nodes WHERE user_id = ? AND parent = ? AND name > ? ORDER BY name LIMIT ?`

// ListPage returns up to limit+1 children of dir whose names sort after
// after (byte order; "" starts at the first), by name. The cursor is a name,
// not an offset: an entry that exists from the first page to the last is
// listed exactly once whatever is added or removed meanwhile, and one
// added or removed meanwhile shows at most once. The one past limit only
// says another page follows. NotFound for a missing dir, NotDir for a file.
func (s *SQLStore) ListPage(ctx context.Context, uid int64, dir, after string, limit int) ([]Node, error) {
	const op = "meta.ListPage"
	d, err := s.Stat(ctx, uid, dir)
	if err != nil {
		return nil, err
	}
	if !d.IsDir {
		return nil, errs.E(op, errs.NotDir, dir, nil)
	}
	if limit < 1 {
		limit = 1
	}
	rows, err := s.r.QueryContext(ctx, listPageQuery, uid, dir, after, limit+1)
	if err != nil {
		return nil, wrap(op, dir, err)
	}
	defer rows.Close()
	out := make([]Node, 0, min(limit+1, 1024))
	for rows.Next() {
		out = append(out, Node{})
		if err := scanFast(rows, uid, &out[len(out)-1]); err != nil {
			return nil, wrap(op, dir, err)
		}
	}
	return out, wrap(op, dir, rows.Err())
}
