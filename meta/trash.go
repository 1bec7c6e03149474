package meta

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"

	"netdisk/errs"
	"netdisk/vpath"
)

// The trash (migration 017). Deleting a node never drops its rows: they
// move, with their chunk lists and dead properties, under the hidden path
// trashRoot(id) of a new trash item, in one UPDATE of the subtree's paths
// (what a move costs), so deleting a folder of 100,000 files is one
// statement, and the chunks stay referenced (file_chunks) without a clause
// of their own in the GC's condition. A path that does not start with '/'
// is outside every path vpath.Clean gives and every subtree range, so
// listings, walks, lookups and the quota's subtree sums never see it; a
// query over all of a user's nodes that must not count the trash adds
// LiveNodes.
//
// What a user is charged (finished bytes and the metadata charge) leaves
// with the item and comes back with a restore: the trash is not in the
// quota. Expunging an item (for good, by retention, or to keep history
// within its share) deletes its rows, and only then are its chunks garbage.

// LiveNodes is the SQL condition (on nodes, unqualified) that keeps the
// nodes a user sees and leaves out those in the trash: every live path
// starts with '/', every trashed one with '#'.
const LiveNodes = `path >= '/'`

// TrashItem is one deleted node (a folder with its whole subtree).
type TrashItem struct {
	ID        int64
	UserID    int64
	Path      string // where it was
	IsDir     bool
	Size      int64 // bytes of its files
	Deleted   time.Time
	DeletedBy int64 // the account that deleted it
	// charge is what the item's nodes were charged when they left
	// (chargeOf), invalid for items trashed before the store kept it.
	charge sql.NullInt64
}

// Trash is each user's trash. Ids are never given twice; an item of another
// user is NotFound, as an unknown id is.
type Trash interface {
	// ListTrash returns uid's items newest first: at most limit, with ids
	// below before (0: from the newest).
	ListTrash(ctx context.Context, uid int64, before int64, limit int) ([]TrashItem, error)
	// OldestTrash returns up to limit items of any user deleted before
	// cutoff (all of them when cutoff is zero), oldest first, of user uid
	// only when uid is not zero.
	OldestTrash(ctx context.Context, uid int64, cutoff time.Time, limit int) ([]TrashItem, error)
	// TrashItem returns uid's item id.
	TrashItem(ctx context.Context, uid, id int64) (TrashItem, error)
	// TrashByPath returns uid's newest item that was at path.
	TrashByPath(ctx context.Context, uid int64, path string) (TrashItem, error)
	// TrashCost returns what restoring uid's item id would charge, as
	// SubtreeSize does for a path, before any folder it recreates.
	TrashCost(ctx context.Context, uid, id int64) (int64, error)
	// TrashUsage returns the bytes of the files in each user's trash, for
	// the users that have any.
	TrashUsage(ctx context.Context) (map[int64]int64, error)
	// RestoreTrashTx puts uid's item id back at its path in tx, recreating
	// missing folders on the way; a name taken there makes it come back as
	// RestoredName's first free name. It never overwrites. It returns the
	// path it restored to and how it moved the user's charge (refused
	// beyond maxGrowth, and past the quota, with Quota). A missing item is
	// NotFound (so of two concurrent restores, one is); a file where a
	// folder of the path should be is NotDir.
	RestoreTrashTx(ctx context.Context, tx *Tx, uid, id int64, maxGrowth int64) (string, int64, error)
	// ExpungeTrash deletes uid's item id for good; its chunks become
	// garbage unless something else holds them.
	ExpungeTrash(ctx context.Context, uid, id int64) error
	// EmptyTrash expunges every item of uid and returns how many there were.
	EmptyTrash(ctx context.Context, uid int64) (int64, error)
	// CheckTrash reports, for fsck, every item without its node and every
	// hidden node without its item, one line each.
	CheckTrash(ctx context.Context) ([]string, error)
}

// trashRoot is the hidden path an item's node lives at.
func trashRoot(id int64) string { return "#" + strconv.FormatInt(id, 10) }

// TrashRoot is the path at which OpenFile and Stat find item id's node
// (of its user's), for reading a trashed file's bytes without restoring
// it. No path a user can name reaches it.
func TrashRoot(id int64) string { return trashRoot(id) }

const trashCols = `id, user_id, path, is_dir, size, deleted_ns, deleted_by, charge`

func scanTrash(r rowScanner) (TrashItem, error) {
	var it TrashItem
	var ns int64
	err := r.Scan(&it.ID, &it.UserID, &it.Path, &it.IsDir, &it.Size, &ns, &it.DeletedBy, &it.charge)
	it.Deleted = time.Unix(0, ns)
	return it, err
}

// trashTx moves path and its subtree into uid's trash as one new item and
// gives back what they were charged.
func trashTx(ctx context.Context, tx *sql.Tx, op string, uid int64, p string, now time.Time) error {
	n, err := stat(ctx, tx, op, uid, p)
	if err != nil {
		return err
	}
	if p == "/" {
		return errs.E(op, errs.Permission, p, errors.New("the root cannot be removed"))
	}
	charge, size, err := itemFigures(ctx, tx, uid, n)
	if err != nil {
		return err
	}
	if err := dropLinksTx(ctx, tx, uid, p); err != nil {
		return err
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO trash_items(user_id, path, is_dir, size, deleted_ns, deleted_by, charge) VALUES (?,?,?,?,?,?,?)`,
		uid, p, n.IsDir, size, now.UnixNano(), uid, charge)
	if err != nil {
		return err
	}
	id, err := res.LastInsertId()
	if err != nil {
		return err
	}
	root := trashRoot(id)
	if n.IsDir {
		if err := moveRows(ctx, tx, uid, p, root); err != nil {
			return err
		}
	}
	// The item's node keeps its name column; its path and parent hide it.
	if _, err := tx.ExecContext(ctx, `UPDATE nodes SET path = ?, parent = '#' WHERE id = ?`, root, n.ID); err != nil {
		return err
	}
	if n.IsDir {
		if err := foldTx(ctx, tx, uid, id, p, now); err != nil {
			return err
		}
	}
	if err := touchDirs(ctx, tx, uid, now, vpath.Parent(p)); err != nil {
		return err
	}
	if err := addMeta(ctx, tx, op, uid, -charge, p, false); err != nil {
		return err
	}
	return addFinished(ctx, tx, op, uid, -size, p)
}

// foldWindow is how recently an item deleted from under a folder must have
// gone for the folder's own deletion to take it back in.
const foldWindow = 10 * time.Minute

// foldTx takes into item id (folder p, just trashed) the items deleted from
// under p within foldWindow, newest first, each back at its place in the
// folder's hidden tree. rm -rf, and file managers over the mount, delete a
// tree leaf first, one call per entry: without this the folder's item would
// be an empty folder and its restore would not bring the tree back. An item
// whose place is taken (deleted there twice) or whose folder is not in the
// item stays an item of its own.
func foldTx(ctx context.Context, tx *sql.Tx, uid, id int64, p string, now time.Time) error {
	root := trashRoot(id)
	cond, args := subtree(p)
	rows, err := tx.QueryContext(ctx, `SELECT `+trashCols+` FROM trash_items WHERE user_id = ? AND id <> ? AND deleted_ns >= ? AND `+cond+` ORDER BY id DESC`,
		append([]any{uid, id, now.Add(-foldWindow).UnixNano()}, args...)...)
	its, err := scanAll(rows, err, scanTrash)
	if err != nil {
		return err
	}
	var folded int64
	// What the folded items were charged joins the folder's charge; one
	// that was not kept makes the folder's unknown too (measured at its
	// restore).
	var foldedCharge int64
	chargeKnown := true
	for _, it := range its {
		dst := root + it.Path[len(p):]
		var taken, parentIsDir bool
		if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM nodes WHERE user_id = ? AND path = ?),
			EXISTS (SELECT 1 FROM nodes WHERE user_id = ? AND path = ? AND is_dir = 1)`,
			uid, dst, uid, vpath.Parent(dst)).Scan(&taken, &parentIsDir); err != nil {
			return err
		}
		if taken || !parentIsDir {
			continue
		}
		from := trashRoot(it.ID)
		if it.IsDir {
			if err := moveRows(ctx, tx, uid, from, dst); err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, `UPDATE nodes SET path = ?, parent = ? WHERE user_id = ? AND path = ?`,
			dst, vpath.Parent(dst), uid, from); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM trash_items WHERE id = ?`, it.ID); err != nil {
			return err
		}
		folded += it.Size
		foldedCharge += it.charge.Int64
		chargeKnown = chargeKnown && it.charge.Valid
	}
	if len(its) == 0 {
		return nil
	}
	if !chargeKnown {
		_, err = tx.ExecContext(ctx, `UPDATE trash_items SET size = size + ?, charge = NULL WHERE id = ?`, folded, id)
		return err
	}
	_, err = tx.ExecContext(ctx, `UPDATE trash_items SET size = size + ?, charge = charge + ? WHERE id = ?`, folded, foldedCharge, id)
	return err
}

// itemFigures returns what node n and its subtree are charged (chargeOf)
// and the bytes of their files, reading the subtree's rows once for both.
func itemFigures(ctx context.Context, tx *sql.Tx, uid int64, n Node) (charge, size int64, err error) {
	if !n.IsDir {
		charge, err = chargeOf(ctx, tx, uid, n)
		return charge, n.Size, err
	}
	var props int64
	if err := tx.QueryRowContext(ctx, `SELECT `+propBytesSQL+` FROM props WHERE node_id = ?`, n.ID).Scan(&props); err != nil {
		return 0, 0, err
	}
	cond, args := subtree(n.Path)
	a := append([]any{uid}, args...)
	var count, names, bytes, below int64
	if err := tx.QueryRowContext(ctx, `SELECT count(*), ifnull(sum(octet_length(name)), 0), ifnull(sum(CASE WHEN is_dir = 0 THEN size ELSE 0 END), 0) FROM nodes WHERE user_id = ? AND `+cond, a...).Scan(&count, &names, &bytes); err != nil {
		return 0, 0, err
	}
	if err := tx.QueryRowContext(ctx, `SELECT `+propBytesSQL+` FROM props WHERE node_id IN (SELECT id FROM nodes WHERE user_id = ? AND `+cond+`)`, a...).Scan(&below); err != nil {
		return 0, 0, err
	}
	return EntryCharge(n.Name()) + props + count*EntryBytes + names + below, bytes, nil
}

// RestoredName returns the n-th name a restore tries for p when p is taken:
// "name (restored).ext", then "name (restored 2).ext", … A folder's name,
// or a name whose only dot leads it (".profile"), has no extension.
func RestoredName(p string, isDir bool, n int) string {
	dir, base := vpath.Parent(p), vpath.Base(p)
	stem, ext := base, ""
	if !isDir {
		if e := path.Ext(base); e != "" && e != base {
			stem, ext = strings.TrimSuffix(base, e), e
		}
	}
	tag := " (restored)"
	if n > 1 {
		tag = fmt.Sprintf(" (restored %d)", n)
	}
	return vpath.Join(dir, stem+tag+ext)
}

// maxRestoreNames bounds the free-name search: past it the restore is
// Exists rather than a walk over a folder full of restored copies.
const maxRestoreNames = 1000

func restoreTx(ctx context.Context, tx *sql.Tx, op string, uid, id int64, now time.Time) (string, error) {
	// Claiming the item first makes a concurrent restore of it NotFound:
	// write transactions run one at a time on both engines.
	it, err := scanTrash(tx.QueryRowContext(ctx, `DELETE FROM trash_items WHERE id = ? AND user_id = ? RETURNING `+trashCols, id, uid))
	if errors.Is(err, sql.ErrNoRows) {
		return "", errs.E(op, errs.NotFound, "", errors.New("no such item in the trash"))
	}
	if err != nil {
		return "", err
	}
	if err := ensureDirs(ctx, tx, op, uid, vpath.Parent(it.Path), now); err != nil {
		return "", err
	}
	dst := it.Path
	for i := 1; ; i++ {
		_, err := stat(ctx, tx, op, uid, dst)
		if errs.Is(err, errs.NotFound) {
			break
		}
		if err != nil {
			return "", err
		}
		if i > maxRestoreNames {
			return "", errs.E(op, errs.Exists, it.Path, errors.New("no free name to restore to"))
		}
		dst = RestoredName(it.Path, it.IsDir, i)
	}
	root := trashRoot(id)
	if it.IsDir {
		if err := moveRows(ctx, tx, uid, root, dst); err != nil {
			return "", err
		}
	}
	res, err := tx.ExecContext(ctx, `UPDATE nodes SET path = ?, parent = ?, name = ? WHERE user_id = ? AND path = ?`,
		dst, vpath.Parent(dst), vpath.Base(dst), uid, root)
	if err != nil {
		return "", err
	}
	if k, _ := res.RowsAffected(); k != 1 {
		return "", fmt.Errorf("meta: trash item %d has no node", id)
	}
	charge, err := restoredCharge(ctx, tx, op, uid, it, dst)
	if err != nil {
		return "", err
	}
	if err := touchDirs(ctx, tx, uid, now, vpath.Parent(dst)); err != nil {
		return "", err
	}
	if err := addMeta(ctx, tx, op, uid, charge, dst, true); err != nil {
		return "", err
	}
	return dst, addFinished(ctx, tx, op, uid, it.Size, dst)
}

// restoredCharge is what item it charges back, restored at dst: what it was
// charged when it left, its own entry's name now dst's; measured over the
// restored subtree when the item did not keep it.
func restoredCharge(ctx context.Context, tx *sql.Tx, op string, uid int64, it TrashItem, dst string) (int64, error) {
	if it.charge.Valid {
		return it.charge.Int64 - EntryCharge(vpath.Base(it.Path)) + EntryCharge(vpath.Base(dst)), nil
	}
	n, err := stat(ctx, tx, op, uid, dst)
	if err != nil {
		return 0, err
	}
	return chargeOf(ctx, tx, uid, n)
}

// ensureDirs makes dir and its missing ancestors folders; a file on the way
// is NotDir: a restore never replaces anything.
func ensureDirs(ctx context.Context, tx *sql.Tx, op string, uid int64, dir string, now time.Time) error {
	if dir == "/" {
		return nil
	}
	n, err := stat(ctx, tx, op, uid, dir)
	switch {
	case err == nil && n.IsDir:
		return nil
	case err == nil:
		return errs.E(op, errs.NotDir, dir, fmt.Errorf("cannot restore into %s: it is a file", dir))
	case !errs.Is(err, errs.NotFound):
		return err
	}
	if err := ensureDirs(ctx, tx, op, uid, vpath.Parent(dir), now); err != nil {
		return err
	}
	_, err = mkdirTx(ctx, tx, op, uid, dir, now, 0)
	return err
}

// expungeTx deletes item it's rows (its nodes' chunk lists and properties go
// with them).
func expungeTx(ctx context.Context, tx *sql.Tx, uid, id int64) (bool, error) {
	res, err := tx.ExecContext(ctx, `DELETE FROM trash_items WHERE id = ? AND user_id = ?`, id, uid)
	if err != nil {
		return false, err
	}
	if k, _ := res.RowsAffected(); k == 0 {
		return false, nil
	}
	root := trashRoot(id)
	if err := deleteRows(ctx, tx, uid, root); err != nil {
		return false, err
	}
	_, err = tx.ExecContext(ctx, `DELETE FROM nodes WHERE user_id = ? AND path = ?`, uid, root)
	return true, err
}

// ListTrash returns uid's items newest first.
func (s *SQLStore) ListTrash(ctx context.Context, uid int64, before int64, limit int) ([]TrashItem, error) {
	if before <= 0 {
		before = 1<<63 - 1
	}
	rows, err := s.r.QueryContext(ctx, `SELECT `+trashCols+` FROM trash_items WHERE user_id = ? AND id < ? ORDER BY id DESC LIMIT ?`, uid, before, limit)
	out, err := scanAll(rows, err, scanTrash)
	return out, wrap("meta.ListTrash", "", err)
}

// OldestTrash returns the oldest items deleted before cutoff.
func (s *SQLStore) OldestTrash(ctx context.Context, uid int64, cutoff time.Time, limit int) ([]TrashItem, error) {
	q, args := `SELECT `+trashCols+` FROM trash_items WHERE 1 = 1`, []any{}
	if !cutoff.IsZero() {
		q, args = q+` AND deleted_ns < ?`, append(args, cutoff.UnixNano())
	}
	if uid != 0 {
		q, args = q+` AND user_id = ?`, append(args, uid)
	}
	rows, err := s.r.QueryContext(ctx, q+` ORDER BY deleted_ns, id LIMIT ?`, append(args, limit)...)
	out, err := scanAll(rows, err, scanTrash)
	return out, wrap("meta.OldestTrash", "", err)
}

// TrashItem returns one of uid's items.
func (s *SQLStore) TrashItem(ctx context.Context, uid, id int64) (TrashItem, error) {
	it, err := scanTrash(s.r.QueryRowContext(ctx, `SELECT `+trashCols+` FROM trash_items WHERE id = ? AND user_id = ?`, id, uid))
	if errors.Is(err, sql.ErrNoRows) {
		return TrashItem{}, errs.E("meta.TrashItem", errs.NotFound, "", errors.New("no such item in the trash"))
	}
	return it, wrap("meta.TrashItem", "", err)
}

// TrashByPath returns the newest item deleted at path.
func (s *SQLStore) TrashByPath(ctx context.Context, uid int64, path string) (TrashItem, error) {
	it, err := scanTrash(s.r.QueryRowContext(ctx, `SELECT `+trashCols+` FROM trash_items WHERE user_id = ? AND path = ? ORDER BY id DESC LIMIT 1`, uid, path))
	if errors.Is(err, sql.ErrNoRows) {
		return TrashItem{}, errs.E("meta.TrashByPath", errs.NotFound, path, errors.New("nothing deleted at this path is in the trash"))
	}
	return it, wrap("meta.TrashByPath", path, err)
}

// TrashCost is the item's bytes and the charge it kept, or the SubtreeSize
// of its hidden root when it kept none.
func (s *SQLStore) TrashCost(ctx context.Context, uid, id int64) (int64, error) {
	it, err := s.TrashItem(ctx, uid, id)
	if err != nil {
		return 0, err
	}
	if it.charge.Valid {
		return it.Size + it.charge.Int64, nil
	}
	return s.SubtreeSize(ctx, uid, trashRoot(id))
}

// TrashUsage sums each user's trash.
func (s *SQLStore) TrashUsage(ctx context.Context) (map[int64]int64, error) {
	return s.usageByUser(ctx, "meta.TrashUsage", `SELECT user_id, sum(size) FROM trash_items GROUP BY user_id`)
}

// usageByUser runs a query answering (user_id, bytes) rows as a map.
func (s *SQLStore) usageByUser(ctx context.Context, op, query string) (map[int64]int64, error) {
	rows, err := s.r.QueryContext(ctx, query)
	type usage struct{ uid, bytes int64 }
	us, err := scanAll(rows, err, func(r rowScanner) (usage, error) {
		var u usage
		return u, r.Scan(&u.uid, &u.bytes)
	})
	if err != nil {
		return nil, wrap(op, "", err)
	}
	out := make(map[int64]int64, len(us))
	for _, u := range us {
		out[u.uid] = u.bytes
	}
	return out, nil
}

// RestoreTrashTx restores an item inside tx.
func (s *SQLStore) RestoreTrashTx(ctx context.Context, tx *Tx, uid, id int64, maxGrowth int64) (string, int64, error) {
	const op = "meta.RestoreTrash"
	var dst string
	delta, err := measured(ctx, tx.tx, op, uid, "", maxGrowth, func() (err error) {
		dst, err = restoreTx(ctx, tx.tx, op, uid, id, s.now())
		return err
	})
	return dst, delta, err
}

// ExpungeTrash deletes an item for good.
func (s *SQLStore) ExpungeTrash(ctx context.Context, uid, id int64) error {
	const op = "meta.ExpungeTrash"
	return wrap(op, "", s.tx(ctx, func(tx *sql.Tx) error {
		found, err := expungeTx(ctx, tx, uid, id)
		if err == nil && !found {
			err = errs.E(op, errs.NotFound, "", errors.New("no such item in the trash"))
		}
		return err
	}))
}

// EmptyTrash expunges all of uid's items in one transaction.
func (s *SQLStore) EmptyTrash(ctx context.Context, uid int64) (int64, error) {
	const op = "meta.EmptyTrash"
	var n int64
	err := s.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM trash_items WHERE user_id = ?`, uid)
		if err != nil {
			return err
		}
		if n, err = res.RowsAffected(); err != nil || n == 0 {
			return err
		}
		// Whole trees of the trash go, nothing live changes: no folder's
		// tree_seq needs a bump.
		return treeBulk(ctx, tx, `DELETE FROM nodes WHERE user_id = ? AND NOT (`+LiveNodes+`)`, uid)
	})
	return n, wrap(op, "", err)
}

// displaceTx clears dst, found as dn, for a Move or Copy of src that
// overwrites it. This is the one place that decides what a replace keeps:
// a file replaced by a file is a change of its content (history keeps the
// old content as a version); a replace with a folder on either side takes
// what was there to the trash, as a delete does.
func displaceTx(ctx context.Context, tx *sql.Tx, op string, uid int64, src, dn Node, now time.Time) error {
	if !src.IsDir && !dn.IsDir {
		return removeTx(ctx, tx, op, uid, dn.Path, now)
	}
	return trashTx(ctx, tx, op, uid, dn.Path, now)
}

// CheckTrash finds items and hidden nodes that lost each other.
func (s *SQLStore) CheckTrash(ctx context.Context) ([]string, error) {
	const op = "meta.CheckTrash"
	rows, err := s.r.QueryContext(ctx, `SELECT t.id, t.user_id, t.path FROM trash_items t
		WHERE NOT EXISTS (SELECT 1 FROM nodes n WHERE n.user_id = t.user_id AND n.path = '#' || t.id) ORDER BY t.id`)
	out, err := scanAll(rows, err, func(r rowScanner) (string, error) {
		var id, uid int64
		var p string
		err := r.Scan(&id, &uid, &p)
		return fmt.Sprintf("trash item %d of user %d (%s) has no node", id, uid, p), err
	})
	if err != nil {
		return nil, wrap(op, "", err)
	}
	rows, err = s.r.QueryContext(ctx, `SELECT n.id, n.user_id, n.path FROM nodes n WHERE n.parent = '#'
		AND NOT EXISTS (SELECT 1 FROM trash_items t WHERE t.user_id = n.user_id AND '#' || t.id = n.path) ORDER BY n.id`)
	orphans, err := scanAll(rows, err, func(r rowScanner) (string, error) {
		var id, uid int64
		var p string
		err := r.Scan(&id, &uid, &p)
		return fmt.Sprintf("node %d of user %d is in the trash as %s, which has no item", id, uid, p), err
	})
	return append(out, orphans...), wrap(op, "", err)
}
