package meta

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"netdisk/errs"
	"netdisk/vpath"
)

// nodeCols are the columns scanNode reads; openFileCols (aliased) and
// listCols (scanFast) must name the same ones in the same order.
const nodeCols = `id, user_id, path, is_dir, size, mode, mtime_ns, file_hash, ifnull(content_md5, ''), ifnull(content_sha1, ''), ifnull(link_target, ''), tree_seq`

type querier interface {
	QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row
	QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error)
	ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error)
}

func scanNode(row rowScanner) (Node, error) {
	var n Node
	var mtime int64
	err := row.Scan(&n.ID, &n.UserID, &n.Path, &n.IsDir, &n.Size, &n.Mode, &mtime, &n.FileHash, &n.MD5, &n.SHA1, &n.Target, &n.TreeSeq)
	n.ModTime = time.Unix(0, mtime)
	return n, err
}

func stat(ctx context.Context, q querier, op string, uid int64, path string) (Node, error) {
	n, err := scanNode(q.QueryRowContext(ctx, `SELECT `+nodeCols+` FROM nodes WHERE user_id = ? AND path = ?`, uid, path))
	if errors.Is(err, sql.ErrNoRows) {
		return Node{}, errs.E(op, errs.NotFound, path, nil)
	}
	return n, wrap(op, path, err)
}

// Stat returns the node at path.
func (s *SQLStore) Stat(ctx context.Context, uid int64, path string) (Node, error) {
	return stat(ctx, s.r, "meta.Stat", uid, path)
}

// NodeByID returns user uid's node id.
func (s *SQLStore) NodeByID(ctx context.Context, uid, id int64) (Node, error) {
	const op = "meta.NodeByID"
	n, err := scanNode(s.r.QueryRowContext(ctx, `SELECT `+nodeCols+` FROM nodes WHERE user_id = ? AND id = ? AND `+LiveNodes, uid, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Node{}, errs.Errorf(op, errs.NotFound, "no such file id")
	}
	return n, wrap(op, "", err)
}

// List returns the children of dir, by name.
func (s *SQLStore) List(ctx context.Context, uid int64, dir string) ([]Node, error) {
	const op = "meta.List"
	d, err := s.Stat(ctx, uid, dir)
	if err != nil {
		return nil, err
	}
	if !d.IsDir {
		return nil, errs.E(op, errs.NotDir, dir, nil)
	}
	rows, err := s.r.QueryContext(ctx, `SELECT `+nodeCols+` FROM nodes WHERE user_id = ? AND parent = ? ORDER BY name`, uid, dir)
	out, err := scanAll(rows, err, scanNode)
	return out, wrap(op, dir, err)
}

// subtree returns the SQL condition and arguments selecting the nodes strictly
// below dir. A range on path ('/' is 0x2F, '0' is 0x30) uses the index and,
// unlike LIKE, treats no character of a name as a wildcard.
func subtree(dir string) (string, []any) {
	if dir == "/" {
		return `path > '/'`, nil
	}
	return `path >= ? AND path < ?`, []any{dir + "/", dir + "0"}
}

// CountTree counts nodes below dir, up to limit+1.
func (s *SQLStore) CountTree(ctx context.Context, uid int64, dir string, limit int) (int, error) {
	cond, args := subtree(dir)
	var n int
	err := s.r.QueryRowContext(ctx, `SELECT count(*) FROM (SELECT 1 FROM nodes WHERE user_id = ? AND `+cond+` LIMIT ?) AS below`,
		append(append([]any{uid}, args...), limit+1)...).Scan(&n)
	return n, wrap("meta.CountTree", dir, err)
}

// checkParent makes sure the parent of path exists and is a directory.
func checkParent(ctx context.Context, q querier, op string, uid int64, path string) error {
	parent := vpath.Parent(path)
	if parent == "" {
		return errs.E(op, errs.Exists, path, errors.New("the root always exists"))
	}
	p, err := stat(ctx, q, op, uid, parent)
	if err != nil && !errs.Is(err, errs.NotFound) {
		return err
	}
	return parentIsDir(op, path, p, err == nil)
}

// parentIsDir is checkParent's verdict on the parent of path, looked up
// already (found false: it does not exist).
func parentIsDir(op, path string, p Node, found bool) error {
	parent := vpath.Parent(path)
	switch {
	case parent == "":
		return errs.E(op, errs.Exists, path, errors.New("the root always exists"))
	case !found:
		return errs.E(op, errs.NoParent, path, fmt.Errorf("parent %s does not exist", parent))
	case !p.IsDir:
		return errs.E(op, errs.NotDir, path, fmt.Errorf("parent %s is a file", parent))
	}
	return nil
}

// Mkdir creates a directory whose parent exists.
func (s *SQLStore) Mkdir(ctx context.Context, uid int64, path string, mtime time.Time) (Node, error) {
	return s.mkdir(ctx, "meta.Mkdir", uid, path, mtime, 0)
}

// mkdir creates a directory whose parent exists with mode as stored (0: the
// default permissions; StoredMode).
func (s *SQLStore) mkdir(ctx context.Context, op string, uid int64, path string, mtime time.Time, mode uint32) (Node, error) {
	var n Node
	err := s.tx(ctx, func(tx *sql.Tx) (err error) {
		n, err = mkdirTx(ctx, tx, op, uid, path, mtime, mode)
		return err
	})
	return n, wrap(op, path, err)
}

// mkdirTx is mkdir inside the caller's transaction; the new entry is charged
// (charge.go).
func mkdirTx(ctx context.Context, tx *sql.Tx, op string, uid int64, path string, mtime time.Time, mode uint32) (Node, error) {
	var n Node
	err := func() error {
		if err := checkParent(ctx, tx, op, uid, path); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO nodes(user_id, path, parent, name, is_dir, mode, mtime_ns) VALUES (?,?,?,?,1,?,?)`,
			uid, path, vpath.Parent(path), vpath.Base(path), mode, mtime.UnixNano())
		if isUnique(err) {
			return errs.E(op, errs.Exists, path, nil)
		}
		if err != nil {
			return err
		}
		if err := touchDirs(ctx, tx, uid, mtime, vpath.Parent(path)); err != nil {
			return err
		}
		if err := addMeta(ctx, tx, op, uid, EntryCharge(vpath.Base(path)), path, true); err != nil {
			return err
		}
		id, _ := res.LastInsertId()
		n = Node{ID: id, UserID: uid, Path: path, IsDir: true, Mode: mode, ModTime: time.Unix(0, mtime.UnixNano())}
		return nil
	}()
	return n, err
}

// addFinished moves a user's finished bytes by delta; growth is refused when
// it would take them past a non-zero total. One statement on the hot path:
// the quota condition is part of the UPDATE, and the user's row is read only
// to explain a refusal.
func addFinished(ctx context.Context, tx *sql.Tx, op string, uid, delta int64, path string) error {
	return addUsage(ctx, tx, op, uid, "use_space_finished", delta, path, true, "")
}

// addUsage adds delta to one of the user's usage columns (column is a
// constant of the callers, never input). A growth, when check, is admitted
// only while the files and their metadata stay within the quota; a refusal
// says how much was free and how much was needed (what, after "needed").
func addUsage(ctx context.Context, tx *sql.Tx, op string, uid int64, column string, delta int64, path string, check bool, what string) error {
	if delta == 0 {
		return nil
	}
	q, args := `UPDATE users SET `+column+` = `+column+` + ? WHERE id = ?`, []any{delta, uid}
	if delta > 0 && check {
		q, args = q+` AND (quota_total = 0 OR use_space_finished + use_space_meta + ? <= quota_total)`, append(args, delta)
	}
	res, err := tx.ExecContext(ctx, q, args...)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n == 1 {
		return err
	}
	var total, used int64
	if err := tx.QueryRowContext(ctx, `SELECT quota_total, use_space_finished + use_space_meta FROM users WHERE id = ?`, uid).Scan(&total, &used); err != nil {
		return err // sql.ErrNoRows: no such user
	}
	return errs.OverQuota(op, path, total-used, delta, what)
}

// chunkIDs finds or inserts each chunk record by SHA-256. The statements come
// from the connection's statement cache (_stmt_cache_size), prepared once.
func (s *SQLStore) chunkIDs(ctx context.Context, tx *sql.Tx, chunks []Chunk) ([]int64, error) {
	ids := make([]int64, len(chunks))
	now := s.now().UnixNano()
	for i, c := range chunks {
		if c.ID != 0 {
			ids[i] = c.ID
			continue
		}
		// One statement for a new record; a record that exists inserts no
		// row and is looked up. An Exec, not a query (INSERT … RETURNING):
		// database/sql starts a goroutine for every query in a transaction
		// (to watch its context), and waking a thread for it costs more
		// than the insert.
		res, err := tx.ExecContext(ctx, `INSERT INTO chunks(sha256, md5, size, created_ns, reveal_draw) VALUES (?,?,?,?,?) ON CONFLICT(sha256) DO NOTHING`,
			c.SHA256, c.MD5, c.Size, now, newDraw())
		if err != nil {
			return nil, err
		}
		inserted, err := res.RowsAffected()
		if err != nil {
			return nil, err
		}
		created := inserted == 1
		if created {
			ids[i], err = res.LastInsertId()
		} else {
			err = tx.QueryRowContext(ctx, `SELECT id FROM chunks WHERE sha256 = ?`, c.SHA256).Scan(&ids[i])
		}
		if err != nil {
			return nil, err
		}
		// Inline bytes go with a record this commit creates; an existing
		// record's bytes are stored already (blob or inline).
		if c.Data == nil || !created {
			continue
		}
		if int64(len(c.Data)) != c.Size {
			return nil, errs.Errorf("meta.CommitFile", errs.Invalid, "inline chunk %s has %d bytes, %d recorded", c.SHA256, len(c.Data), c.Size)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO chunk_data(chunk_id, data) VALUES (?,?)`, ids[i], c.Data); err != nil {
			return nil, err
		}
	}
	return ids, nil
}

// CommitFile makes f the content of path.
func (s *SQLStore) CommitFile(ctx context.Context, uid int64, path string, f NewFile) (Node, error) {
	const op = "meta.CommitFile"
	var n Node
	err := s.tx(ctx, func(tx *sql.Tx) (err error) {
		n, _, _, err = s.commitFileTx(ctx, tx, op, uid, path, f, true)
		return err
	})
	return n, wrap(op, path, err)
}

// commitFileTx is CommitFile inside the caller's transaction; it returns
// how the commit moved the user's finished bytes (the new size less the old
// version's, which addFinished applied) and their metadata charge (a new
// file's entry, charge.go), which is refused past the total when checkMeta
// is set.
func (s *SQLStore) commitFileTx(ctx context.Context, tx *sql.Tx, op string, uid int64, path string, f NewFile, checkMeta bool) (Node, int64, int64, error) {
	var n Node
	var delta, metaDelta int64
	err := func() error {
		ids, err := s.chunkIDs(ctx, tx, f.Chunks)
		if err != nil {
			return err
		}
		var old Node
		if n, old, err = putNode(ctx, tx, op, uid, path, f, s.now()); err != nil {
			return err
		}
		if n.Path != "" {
			path = n.Path // a free name (NewFile.FreeName)
		}
		delta = f.Size - old.Size
		if err := addFinished(ctx, tx, op, uid, delta, path); err != nil {
			return err
		}
		if old.ID == 0 {
			metaDelta = EntryCharge(vpath.Base(path))
			if err := addMeta(ctx, tx, op, uid, metaDelta, path, checkMeta); err != nil {
				return err
			}
		}
		if err := drawFile(ctx, tx, f.FileHash); err != nil {
			return err
		}
		for i, id := range ids {
			if _, err := tx.ExecContext(ctx, `INSERT INTO file_chunks(node_id, idx, chunk_id) VALUES (?,?,?)`, n.ID, i, id); err != nil {
				return err
			}
		}
		n.UserID, n.Path, n.IsDir, n.Size, n.FileHash, n.MD5, n.SHA1 = uid, path, false, f.Size, f.FileHash, f.MD5, f.SHA1
		n.ModTime = time.Unix(0, f.ModTime.UnixNano())
		return nil
	}()
	return n, delta, metaDelta, err
}

// putNode inserts the node of a new file at path, or points the file there
// at its new content; old is the version replaced (none: zero).
//
// A new file, the common case, runs no query: the insert does nothing when
// the name is taken, and the folder's mtime update finds no row unless the
// parent is a folder. database/sql starts a goroutine for every query in a
// transaction (see chunkIDs). An overwrite (f.Replacing, or a name found
// taken) looks the file and its parent up in one query.
func putNode(ctx context.Context, tx *sql.Tx, op string, uid int64, path string, f NewFile, now time.Time) (n, old Node, err error) {
	if f.FreeName {
		return putFreeNode(ctx, tx, op, uid, path, f, now)
	}
	if !f.Replacing {
		n, inserted, err := insertFile(ctx, tx, op, uid, path, f, now)
		if err != nil || inserted {
			return n, Node{}, err
		}
	}
	old, found, parent, parentFound, err := statPair(ctx, tx, uid, path)
	switch {
	case err != nil:
		return n, old, err
	case !found && f.Replacing:
		// Removed since the write began: a new file after all.
		if err := parentIsDir(op, path, parent, parentFound); err != nil {
			return n, Node{}, err
		}
		n, inserted, err := insertFile(ctx, tx, op, uid, path, f, now)
		if err == nil && !inserted {
			err = fmt.Errorf("meta: %s is neither free nor taken", path)
		}
		return n, Node{}, err
	case !found:
		return n, Node{}, fmt.Errorf("meta: %s is neither free nor taken", path)
	case old.IsDir:
		return n, Node{}, errs.E(op, errs.IsDir, path, nil)
	}
	if keepsVersion(old, f.FileHash, f.Size) {
		if err := keepVersionTx(ctx, tx, old, now); err != nil {
			return n, old, err
		}
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM file_chunks WHERE node_id = ?`, old.ID); err != nil {
		return n, old, err
	}
	mode := f.Mode
	if mode == 0 {
		mode = old.Mode
	}
	if _, err := tx.ExecContext(ctx, `UPDATE nodes SET size = ?, mode = ?, mtime_ns = ?, file_hash = ?, content_md5 = ?, content_sha1 = ?, link_target = NULL WHERE id = ?`,
		f.Size, mode, f.ModTime.UnixNano(), f.FileHash, nullStr(f.MD5), nullStr(f.SHA1), old.ID); err != nil {
		return n, old, err
	}
	n = old
	n.Mode = mode
	n.Target = "" // a file written over a link replaces the link
	return n, old, nil
}

// maxFreeNames bounds the names a free-name commit tries: past it the
// folder is full of that name, and the commit is refused as Exists.
const maxFreeNames = 1000

// putFreeNode inserts a new file at path or, when that is taken, at the
// first free numbered name beside it (NumberedName); n.Path is the path
// used. The insert that finds a name taken changes nothing, so the choice
// and the insert are one step of the transaction: two commits racing for
// one name cannot both have it.
func putFreeNode(ctx context.Context, tx *sql.Tx, op string, uid int64, path string, f NewFile, now time.Time) (n, old Node, err error) {
	dir := vpath.Parent(path)
	// A name that is already numbered ("a (3).txt", an uploader's choice
	// of a name that was free then) goes on as "a (4).txt".
	stem, k := splitNumbered(vpath.Base(path))
	for i := 0; i < maxFreeNames; i++ {
		p := path
		if i > 0 {
			p = vpath.Join(dir, NumberedName(stem, k+i))
		}
		n, inserted, err := insertFile(ctx, tx, op, uid, p, f, now)
		if err != nil {
			return n, Node{}, err
		}
		if inserted {
			n.Path = p
			return n, Node{}, nil
		}
	}
	return n, Node{}, errs.E(op, errs.Exists, path, errors.New("no free name left for the file"))
}

// splitNumbered undoes NumberedName: "a (3).txt" is ("a.txt", 3), a name
// without a number (name, 1).
func splitNumbered(name string) (string, int) {
	base, ext := name, ""
	if j := strings.LastIndexByte(name, '.'); j > 0 {
		base, ext = name[:j], name[j:]
	}
	open := strings.LastIndex(base, " (")
	if open <= 0 || !strings.HasSuffix(base, ")") {
		return name, 1
	}
	k, err := strconv.Atoi(base[open+2 : len(base)-1])
	if err != nil || k < 2 || strconv.Itoa(k) != base[open+2:len(base)-1] {
		return name, 1
	}
	return base[:open] + ext, k
}

// NumberedName is name for i <= 1, else name with " (i)" before its
// extension ("a (2).txt"; ".bashrc (2)" as a leading dot starts no
// extension). The base is shortened, on a character boundary, so the result
// stays within vpath.MaxNameLen.
func NumberedName(name string, i int) string {
	if i <= 1 {
		return name
	}
	base, ext := name, ""
	if j := strings.LastIndexByte(name, '.'); j > 0 {
		base, ext = name[:j], name[j:]
	}
	tag := fmt.Sprintf(" (%d)", i)
	if over := len(base) + len(tag) + len(ext) - vpath.MaxNameLen; over > 0 {
		if over > len(base) {
			ext = ext[:max(0, len(ext)-(over-len(base)))]
			over = len(base)
		}
		base = base[:len(base)-over]
		for len(base) > 0 && !utf8.ValidString(base) {
			base = base[:len(base)-1]
		}
		for len(ext) > 0 && !utf8.ValidString(ext) {
			ext = ext[:len(ext)-1]
		}
	}
	return base + tag + ext
}

// insertFile inserts a new file's node at path unless the name is taken
// (inserted false, nothing changed). A missing parent, or a file in its
// place, is an error after the insert: the caller's transaction is rolled
// back.
func insertFile(ctx context.Context, tx *sql.Tx, op string, uid int64, path string, f NewFile, now time.Time) (n Node, inserted bool, err error) {
	res, err := tx.ExecContext(ctx, `INSERT INTO nodes(user_id, path, parent, name, is_dir, size, mode, mtime_ns, file_hash, content_md5, content_sha1) VALUES (?,?,?,?,0,?,?,?,?,?,?) ON CONFLICT(user_id, path) DO NOTHING`,
		uid, path, vpath.Parent(path), vpath.Base(path), f.Size, f.Mode, f.ModTime.UnixNano(), f.FileHash, nullStr(f.MD5), nullStr(f.SHA1))
	if err != nil {
		return n, false, err
	}
	if rows, err := res.RowsAffected(); err != nil || rows == 0 {
		return n, false, err
	}
	// A new entry changes its folder; replacing a file's content does not.
	touched, err := touchParent(ctx, tx, uid, now, path)
	if err != nil {
		return n, true, err
	}
	if !touched {
		_, _, parent, parentFound, err := statPair(ctx, tx, uid, path)
		if err == nil {
			err = parentIsDir(op, path, parent, parentFound)
		}
		if err == nil {
			err = fmt.Errorf("meta: the folder of %s was not updated", path)
		}
		return n, true, err
	}
	n.ID, err = res.LastInsertId()
	n.Mode = f.Mode
	return n, true, err
}

// removeTx deletes path and its subtree for good and gives back the bytes
// of the files.
func removeTx(ctx context.Context, tx *sql.Tx, op string, uid int64, path string, now time.Time) error {
	n, err := stat(ctx, tx, op, uid, path)
	if err != nil {
		return err
	}
	if path == "/" {
		return errs.E(op, errs.Permission, path, errors.New("the root cannot be removed"))
	}
	charge, err := chargeOf(ctx, tx, uid, n)
	if err != nil {
		return err
	}
	freed := n.Size
	if n.IsDir {
		cond, args := subtree(path)
		a := append([]any{uid}, args...)
		var sz sql.NullInt64
		if err := tx.QueryRowContext(ctx, `SELECT sum(size) FROM nodes WHERE is_dir = 0 AND user_id = ? AND `+cond, a...).Scan(&sz); err != nil {
			return err
		}
		freed = sz.Int64
		if err := deleteRows(ctx, tx, uid, path); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM nodes WHERE id = ?`, n.ID); err != nil {
		return err
	}
	if err := touchDirs(ctx, tx, uid, now, vpath.Parent(path)); err != nil {
		return err
	}
	if err := addMeta(ctx, tx, op, uid, -charge, path, false); err != nil {
		return err
	}
	return addFinished(ctx, tx, op, uid, -freed, path)
}

// Remove moves path and its subtree into the user's trash (trash.go).
func (s *SQLStore) Remove(ctx context.Context, uid int64, path string) error {
	const op = "meta.Remove"
	return wrap(op, path, s.tx(ctx, func(tx *sql.Tx) error { return trashTx(ctx, tx, op, uid, path, s.now()) }))
}

// prepareDest checks src and dst for Move and Copy and clears dst when allowed.
func prepareDest(ctx context.Context, tx *sql.Tx, op string, uid int64, src, dst string, overwrite bool, now time.Time) (Node, error) {
	sn, err := stat(ctx, tx, op, uid, src)
	if err != nil {
		return Node{}, err
	}
	if src == dst || vpath.IsBelow(dst, src) {
		return Node{}, errs.E(op, errs.Permission, dst, errors.New("destination is the source or inside it"))
	}
	if err := checkParent(ctx, tx, op, uid, dst); err != nil {
		return Node{}, err
	}
	dn, err := stat(ctx, tx, op, uid, dst)
	switch {
	case err == nil && !overwrite:
		return Node{}, errs.E(op, errs.Exists, dst, nil)
	case err == nil:
		if err := displaceTx(ctx, tx, op, uid, sn, dn, now); err != nil {
			return Node{}, err
		}
	case !errs.Is(err, errs.NotFound):
		return Node{}, err
	}
	return sn, nil
}

// Move renames src (and its subtree) to dst.
func (s *SQLStore) Move(ctx context.Context, uid int64, src, dst string, overwrite bool) error {
	const op = "meta.Move"
	return wrap(op, src, s.tx(ctx, func(tx *sql.Tx) error { return moveTx(ctx, tx, op, uid, src, dst, overwrite, s.now()) }))
}

// moveTx is Move inside the caller's transaction.
func moveTx(ctx context.Context, tx *sql.Tx, op string, uid int64, src, dst string, overwrite bool, now time.Time) error {
	return func() error {
		if replaced, err := fileOverFile(ctx, tx, op, uid, src, dst, overwrite, true, now); replaced || err != nil {
			return err
		}
		sn, err := prepareDest(ctx, tx, op, uid, src, dst, overwrite, now)
		if err != nil {
			return err
		}
		if sn.IsDir {
			if err := moveRows(ctx, tx, uid, src, dst); err != nil {
				return err
			}
		}
		if _, err = tx.ExecContext(ctx, `UPDATE nodes SET path = ?, parent = ?, name = ? WHERE id = ?`,
			dst, vpath.Parent(dst), vpath.Base(dst), sn.ID); err != nil {
			return err
		}
		// A new name costs its bytes; a rename is never refused for it
		// (a name is short, and a full drive must stay tidy).
		if err := addMeta(ctx, tx, op, uid, int64(len(vpath.Base(dst))-len(vpath.Base(src))), dst, false); err != nil {
			return err
		}
		// Both folders changed (one when renaming within a folder); the moved
		// node keeps its own time, as rename(2) does.
		return touchDirs(ctx, tx, uid, now, vpath.Parent(src), vpath.Parent(dst))
	}()
}

// Copy copies src to dst; files share their chunks with the original.
func (s *SQLStore) Copy(ctx context.Context, uid int64, src, dst string, overwrite, recursive bool) error {
	const op = "meta.Copy"
	return wrap(op, src, s.tx(ctx, func(tx *sql.Tx) error { return copyTx(ctx, tx, op, uid, src, dst, overwrite, recursive, s.now()) }))
}

// copyTx is Copy inside the caller's transaction.
func copyTx(ctx context.Context, tx *sql.Tx, op string, uid int64, src, dst string, overwrite, recursive bool, now time.Time) error {
	return func() error {
		if replaced, err := fileOverFile(ctx, tx, op, uid, src, dst, overwrite, false, now); replaced || err != nil {
			return err
		}
		sn, err := prepareDest(ctx, tx, op, uid, src, dst, overwrite, now)
		if err != nil {
			return err
		}
		nodes := []Node{sn}
		if sn.IsDir && recursive {
			cond, args := subtree(src)
			rows, err := tx.QueryContext(ctx, `SELECT `+nodeCols+` FROM nodes WHERE user_id = ? AND `+cond+` ORDER BY path`, append([]any{uid}, args...)...)
			if err != nil {
				return err
			}
			for rows.Next() {
				n, err := scanNode(rows)
				if err != nil {
					rows.Close()
					return err
				}
				nodes = append(nodes, n)
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
		}
		var added, charged int64
		for _, n := range nodes {
			np := dst + n.Path[len(src):]
			// The same content keeps its checksums (still unknown stays unknown).
			// A link is copied as a link (its target unchanged), as cp -R does.
			res, err := tx.ExecContext(ctx, `INSERT INTO nodes(user_id, path, parent, name, is_dir, size, mode, mtime_ns, file_hash, content_md5, content_sha1, link_target) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)`,
				uid, np, vpath.Parent(np), vpath.Base(np), n.IsDir, n.Size, n.Mode, n.ModTime.UnixNano(), n.FileHash, nullStr(n.MD5), nullStr(n.SHA1), nullStr(n.Target))
			if err != nil {
				return err
			}
			id, _ := res.LastInsertId()
			if !n.IsDir {
				added += n.Size
				if _, err := tx.ExecContext(ctx, `INSERT INTO file_chunks(node_id, idx, chunk_id) SELECT ?, idx, chunk_id FROM file_chunks WHERE node_id = ?`, id, n.ID); err != nil {
					return err
				}
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO props(node_id, ns, name, value, lang) SELECT ?, ns, name, value, lang FROM props WHERE node_id = ?`, id, n.ID); err != nil {
				return err
			}
			var props int64
			if err := tx.QueryRowContext(ctx, `SELECT `+propBytesSQL+` FROM props WHERE node_id = ?`, id).Scan(&props); err != nil {
				return err
			}
			charged += EntryCharge(vpath.Base(np)) + props
		}
		if err := touchDirs(ctx, tx, uid, now, vpath.Parent(dst)); err != nil {
			return err
		}
		if err := addMeta(ctx, tx, op, uid, charged, dst, true); err != nil {
			return err
		}
		return addFinished(ctx, tx, op, uid, added, dst)
	}()
}

// SetModTime changes a node's modification time.
func (s *SQLStore) SetModTime(ctx context.Context, uid int64, path string, mtime time.Time) error {
	const op = "meta.SetModTime"
	res, err := s.w.ExecContext(ctx, `UPDATE nodes SET mtime_ns = ? WHERE user_id = ? AND path = ?`, mtime.UnixNano(), uid, path)
	if err != nil {
		return wrap(op, path, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return errs.E(op, errs.NotFound, path, nil)
	}
	return nil
}

// FileChunks returns a file's chunks in order with their offsets.
func (s *SQLStore) FileChunks(ctx context.Context, nodeID int64) ([]FileChunk, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT fc.idx, c.id, c.sha256, c.md5, c.size FROM file_chunks fc JOIN chunks c ON c.id = fc.chunk_id WHERE fc.node_id = ? ORDER BY fc.idx`, nodeID)
	var off int64
	out, err := scanAll(rows, err, func(r rowScanner) (FileChunk, error) {
		var fc FileChunk
		err := r.Scan(&fc.Index, &fc.ID, &fc.SHA256, &fc.MD5, &fc.Size)
		fc.Offset = off
		off += fc.Size
		return fc, err
	})
	return out, wrap("meta.FileChunks", "", err)
}

// Props returns a node's dead properties.
func (s *SQLStore) Props(ctx context.Context, nodeID int64) ([]Prop, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT ns, name, value, lang FROM props WHERE node_id = ? ORDER BY ns, name`, nodeID)
	out, err := scanAll(rows, err, func(r rowScanner) (Prop, error) {
		var p Prop
		err := r.Scan(&p.Space, &p.Local, &p.InnerXML, &p.Lang)
		return p, err
	})
	return out, wrap("meta.Props", "", err)
}

// PatchProps applies a PROPPATCH in one transaction, within the bounds on a
// node's properties (props.go).
func (s *SQLStore) PatchProps(ctx context.Context, nodeID int64, set, remove []Prop) error {
	return wrap("meta.PatchProps", "", s.tx(ctx, func(tx *sql.Tx) error {
		_, err := patchPropsTx(ctx, tx, nodeID, set, remove, NoGrowthLimit)
		return err
	}))
}

// PatchPropsTx is PatchProps inside tx; it returns how the patch moved the
// owner's metadata charge (charge.go), refusing growth past the total or
// beyond maxGrowth with errs.Quota.
func (s *SQLStore) PatchPropsTx(ctx context.Context, tx *Tx, nodeID int64, set, remove []Prop, maxGrowth int64) (int64, error) {
	return patchPropsTx(ctx, tx.tx, nodeID, set, remove, maxGrowth)
}

func patchPropsTx(ctx context.Context, tx *sql.Tx, nodeID int64, set, remove []Prop, maxGrowth int64) (int64, error) {
	const op = "meta.PatchProps"
	for _, p := range set {
		if n := p.Bytes(); n > MaxPropBytes {
			return 0, errs.E(op, errs.TooLarge, "", fmt.Errorf("property %s is %d bytes, at most %d are kept", p.Local, n, MaxPropBytes))
		}
	}
	var uid, before, after int64
	if err := tx.QueryRowContext(ctx, `SELECT user_id FROM nodes WHERE id = ?`, nodeID).Scan(&uid); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return 0, errs.E(op, errs.NotFound, "", nil)
		}
		return 0, wrap(op, "", err)
	}
	propBytes := func(n *int64) error {
		return tx.QueryRowContext(ctx, `SELECT `+propBytesSQL+` FROM props WHERE node_id = ?`, nodeID).Scan(n)
	}
	if err := propBytes(&before); err != nil {
		return 0, wrap(op, "", err)
	}
	err := func() error {
		for _, p := range remove {
			if _, err := tx.ExecContext(ctx, `DELETE FROM props WHERE node_id = ? AND ns = ? AND name = ?`, nodeID, p.Space, p.Local); err != nil {
				return err
			}
		}
		for _, p := range set {
			if _, err := tx.ExecContext(ctx, `INSERT INTO props(node_id, ns, name, value, lang) VALUES (?,?,?,?,?) ON CONFLICT(node_id, ns, name) DO UPDATE SET value = excluded.value, lang = excluded.lang`,
				nodeID, p.Space, p.Local, p.InnerXML, p.Lang); err != nil {
				return err
			}
		}
		if len(set) > 0 {
			if err := checkPropBounds(ctx, tx, op, nodeID); err != nil {
				return err
			}
		}
		if err := propBytes(&after); err != nil {
			return err
		}
		if d := after - before; maxGrowth >= 0 && d > maxGrowth {
			return errs.E(op, errs.Quota, "", fmt.Errorf("quota exceeded: the properties need %d bytes, %d were reserved", d, maxGrowth))
		}
		return addMeta(ctx, tx, op, uid, after-before, "", true)
	}()
	if err != nil {
		return 0, wrap(op, "", err)
	}
	return after - before, nil
}

// touchParent is touchDirs for the folder holding path; false when there
// is no such folder (none, or a file).
func touchParent(ctx context.Context, tx *sql.Tx, uid int64, now time.Time, path string) (bool, error) {
	res, err := tx.ExecContext(ctx, touchDirSQL, now.UnixNano(), uid, vpath.Parent(path))
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

const touchDirSQL = `UPDATE nodes SET mtime_ns = ? WHERE user_id = ? AND path = ? AND is_dir = 1`

// touchDirs sets the modification time of the folders dirs to now: a folder
// changes when an entry is added to it, removed from it or renamed into or out
// of it (POSIX; its ancestors do not). It runs in the transaction of the
// change, so a listing never shows the new entries with the old folder time;
// PROPFIND's getlastmodified and the folder's ETag follow from it.
func touchDirs(ctx context.Context, tx *sql.Tx, uid int64, now time.Time, dirs ...string) error {
	for i, d := range dirs {
		if d == "" || (i > 0 && d == dirs[0]) {
			continue
		}
		if _, err := tx.ExecContext(ctx, touchDirSQL, now.UnixNano(), uid, d); err != nil {
			return err
		}
	}
	return nil
}

// nullStr stores "" as NULL: an unknown checksum.
func nullStr(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// PendingChecksums lists files whose content checksums are unknown.
func (s *SQLStore) PendingChecksums(ctx context.Context, afterID int64, limit int) ([]Node, error) {
	const op = "meta.PendingChecksums"
	rows, err := s.r.QueryContext(ctx, `SELECT `+nodeCols+` FROM nodes WHERE is_dir = 0 AND content_md5 IS NULL AND link_target IS NULL AND id > ? ORDER BY id LIMIT ?`, afterID, limit)
	out, err := scanAll(rows, err, scanNode)
	return out, wrap(op, "", err)
}

// SetChecksums records checksums computed from the version (fileHash, size)
// of file nodeID; a version committed meanwhile makes it a no-op.
func (s *SQLStore) SetChecksums(ctx context.Context, nodeID int64, fileHash string, size int64, md5, sha1 string) (bool, error) {
	const op = "meta.SetChecksums"
	res, err := s.w.ExecContext(ctx, `UPDATE nodes SET content_md5 = ?, content_sha1 = ? WHERE id = ? AND is_dir = 0 AND link_target IS NULL AND file_hash = ? AND size = ? AND content_md5 IS NULL`,
		md5, sha1, nodeID, fileHash, size)
	if err != nil {
		return false, wrap(op, "", err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// checkTarget refuses a link target the store does not keep: empty (Linux
// refuses it too), longer than MaxSymlinkTarget, or holding a NUL byte (no
// path can).
func checkTarget(op, path, target string) error {
	switch {
	case target == "":
		return errs.E(op, errs.Invalid, path, errors.New("a symbolic link needs a target"))
	case len(target) > MaxSymlinkTarget:
		return errs.E(op, errs.TooLarge, path, fmt.Errorf("a link target is at most %d bytes, this one is %d", MaxSymlinkTarget, len(target)))
	case strings.IndexByte(target, 0) >= 0:
		return errs.E(op, errs.Invalid, path, errors.New("a link target cannot hold a NUL byte"))
	}
	return nil
}

// Symlink creates a symbolic link at path holding target.
func (s *SQLStore) Symlink(ctx context.Context, uid int64, path, target string, mtime time.Time) (Node, error) {
	const op = "meta.Symlink"
	var n Node
	err := s.tx(ctx, func(tx *sql.Tx) (err error) {
		n, err = symlinkTx(ctx, tx, op, uid, path, target, mtime, true)
		return err
	})
	return n, wrap(op, path, err)
}

// symlinkTx is Symlink inside the caller's transaction: the link is charged
// its target's length (finished bytes, as a file of that size) and its
// entry (charge.go), growth refused past the total when check is set.
func symlinkTx(ctx context.Context, tx *sql.Tx, op string, uid int64, path, target string, mtime time.Time, check bool) (Node, error) {
	if err := checkTarget(op, path, target); err != nil {
		return Node{}, err
	}
	if err := checkParent(ctx, tx, op, uid, path); err != nil {
		return Node{}, err
	}
	size := int64(len(target))
	res, err := tx.ExecContext(ctx, `INSERT INTO nodes(user_id, path, parent, name, is_dir, size, mode, mtime_ns, file_hash, link_target) VALUES (?,?,?,?,0,?,0,?,'',?)`,
		uid, path, vpath.Parent(path), vpath.Base(path), size, mtime.UnixNano(), target)
	if isUnique(err) {
		return Node{}, errs.E(op, errs.Exists, path, nil)
	}
	if err != nil {
		return Node{}, err
	}
	if err := touchDirs(ctx, tx, uid, mtime, vpath.Parent(path)); err != nil {
		return Node{}, err
	}
	if err := addUsage(ctx, tx, op, uid, "use_space_finished", size, path, check, ""); err != nil {
		return Node{}, err
	}
	if err := addMeta(ctx, tx, op, uid, EntryCharge(vpath.Base(path)), path, check); err != nil {
		return Node{}, err
	}
	id, _ := res.LastInsertId()
	return Node{ID: id, UserID: uid, Path: path, Size: size, ModTime: time.Unix(0, mtime.UnixNano()), Target: target}, nil
}
