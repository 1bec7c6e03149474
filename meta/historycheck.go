package meta

import (
	"context"
	"fmt"
)

// CheckHistory reports, for fsck, every reference of the history that does
// not hold, one line each: a version whose file is gone, is a folder or is
// another user's; a version's or a file's chunk (the trash's files
// included) without its record; a version whose chunks do not add up to
// its size. The foreign keys of both engines forbid most of these, but a
// store copied or repaired with them off, or edited by hand, can hold
// them, and each would break a restore or a download of that history
// later, when nobody remembers why.
func (s *SQLStore) CheckHistory(ctx context.Context) ([]string, error) {
	const op = "meta.CheckHistory"
	checks := []struct {
		q    string
		line func(a, b, c int64) string
	}{
		{`SELECT v.id, v.user_id, v.node_id FROM file_versions v LEFT JOIN nodes n ON n.id = v.node_id WHERE n.id IS NULL ORDER BY v.id`,
			func(v, u, n int64) string {
				return fmt.Sprintf("version %d of user %d belongs to node %d, which is gone", v, u, n)
			}},
		{`SELECT v.id, v.user_id, v.node_id FROM file_versions v JOIN nodes n ON n.id = v.node_id WHERE n.is_dir <> 0 ORDER BY v.id`,
			func(v, u, n int64) string {
				return fmt.Sprintf("version %d of user %d belongs to node %d, a folder", v, u, n)
			}},
		{`SELECT v.id, v.user_id, n.user_id FROM file_versions v JOIN nodes n ON n.id = v.node_id WHERE n.user_id <> v.user_id ORDER BY v.id`,
			func(v, u, o int64) string {
				return fmt.Sprintf("version %d of user %d belongs to a file of user %d", v, u, o)
			}},
		{`SELECT vc.version_id, vc.idx, vc.chunk_id FROM version_chunks vc LEFT JOIN chunks c ON c.id = vc.chunk_id WHERE c.id IS NULL ORDER BY vc.version_id, vc.idx`,
			func(v, i, c int64) string {
				return fmt.Sprintf("version %d: chunk %d (id %d) has no record", v, i, c)
			}},
		{`SELECT fc.node_id, fc.idx, fc.chunk_id FROM file_chunks fc LEFT JOIN chunks c ON c.id = fc.chunk_id WHERE c.id IS NULL ORDER BY fc.node_id, fc.idx`,
			func(n, i, c int64) string { return fmt.Sprintf("node %d: chunk %d (id %d) has no record", n, i, c) }},
		{`SELECT v.id, v.size, coalesce(sum(c.size), 0) FROM file_versions v LEFT JOIN version_chunks vc ON vc.version_id = v.id
			LEFT JOIN chunks c ON c.id = vc.chunk_id GROUP BY v.id, v.size HAVING coalesce(sum(c.size), 0) <> v.size ORDER BY v.id`,
			func(v, size, sum int64) string {
				return fmt.Sprintf("version %d is %d bytes but its chunks hold %d", v, size, sum)
			}},
	}
	var out []string
	for _, c := range checks {
		rows, err := s.r.QueryContext(ctx, c.q)
		lines, err := scanAll(rows, err, func(r rowScanner) (string, error) {
			var a, b, x int64
			err := r.Scan(&a, &b, &x)
			return c.line(a, b, x), err
		})
		if err != nil {
			return nil, wrap(op, "", err)
		}
		out = append(out, lines...)
	}
	return out, nil
}
