package meta

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"netdisk/errs"
	"netdisk/vpath"
)

// Version is content a file held before a change of its content replaced
// it (migration 018). It belongs to the file's node, whatever its path now.
type Version struct {
	ID     int64
	NodeID int64
	UserID int64
	// Author is the user whose write produced this content (today always
	// the owner: nobody else writes to a user's drive).
	Author   int64
	Size     int64
	Mode     uint32
	ModTime  time.Time // the content's modification time, as its writer set it
	FileHash string
	MD5      string
	SHA1     string
	// Saved is when a newer content replaced this one, on the store's
	// clock: retention and thinning count from it.
	Saved time.Time
}

// Versions are the files' earlier contents. A change of a file's content
// keeps the replaced content as a version in the transaction of the change,
// wherever the change comes from: a commit over the file (CommitFile,
// CommitFileTx, MergeSession), a file moved or copied over it (Move, Copy),
// a restore (RestoreVersionTx). The one rule of what is kept is keepsVersion.
// When a file replaces another one by Move or Copy, the destination's node
// survives with the source's content: the file at the path keeps its
// identity and its history, the replaced content becomes its newest
// version, and a moved source's own versions join it. Versions are not
// charged to the user (they are not in Finished).
type Versions interface {
	// FileVersions returns the file at path and its versions, newest first.
	// A folder is Invalid.
	FileVersions(ctx context.Context, uid int64, path string) (Node, []Version, error)
	// Version returns version vid of uid's file at path with its chunks. A
	// version of another file, or another user's, is NotFound; a folder is
	// Invalid.
	Version(ctx context.Context, uid int64, path string, vid int64) (Version, []FileChunk, error)
	// RestoreVersionTx makes version vid the content of uid's file at path
	// inside tx, at mtime; the content it replaces is kept as a version
	// (keepsVersion) and the restored version leaves the list (it is the
	// current content). It returns the node and how the restore moved the
	// user's finished bytes, refused beyond maxGrowth or past the quota
	// (Quota). Errors are Version's.
	RestoreVersionTx(ctx context.Context, tx *Tx, uid int64, path string, vid int64, mtime time.Time, maxGrowth int64) (Node, int64, error)
	// DeleteVersion removes version vid of uid's file at path (its chunks
	// become garbage unless something else holds them). Errors are
	// Version's.
	DeleteVersion(ctx context.Context, uid int64, path string, vid int64) error
	// OldestVersions returns up to limit of uid's (0: any user's) versions
	// (any file), oldest first, with ids above afterID: the order history
	// is expunged in.
	OldestVersions(ctx context.Context, uid int64, afterID int64, limit int) ([]Version, error)
	// VersionedFiles returns up to limit ids of files (any user) that have
	// versions, ascending, above afterID: retention walks them.
	VersionedFiles(ctx context.Context, afterID int64, limit int) ([]int64, error)
	// NodeVersions returns the versions of file nodeID, oldest first.
	NodeVersions(ctx context.Context, nodeID int64) ([]Version, error)
	// ExpungeVersion removes uid's version vid whatever file holds it, and
	// reports whether it was there.
	ExpungeVersion(ctx context.Context, uid int64, vid int64) (bool, error)
	// VersionBytes sums the sizes of uid's versions (what they would cost
	// as full copies; they share chunks, so they take at most that).
	VersionBytes(ctx context.Context, uid int64) (int64, error)
	// VersionUsage returns VersionBytes of every user who has versions, for
	// the history share (trash and versions together).
	VersionUsage(ctx context.Context) (map[int64]int64, error)
	// CheckHistory reports, for fsck, every broken reference of versions
	// and of the files' (the trash's too) chunk lists, one line each.
	CheckHistory(ctx context.Context) ([]string, error)
}

// keepsVersion is the one rule of what a replacement keeps: the replaced
// content of a regular file (a link has no content, a folder is structure)
// becomes a version when the new content differs from it (the same bytes
// saved again lose nothing) and it held bytes (an empty file has nothing to
// lose, and writers that create a file empty before filling it would
// otherwise leave a version per file).
func keepsVersion(old Node, newHash string, newSize int64) bool {
	return old.IsFile() && old.Size > 0 && (old.FileHash != newHash || old.Size != newSize)
}

// keepVersionTx records the current content of file old as a version,
// saved at now: the chunk list is copied by reference, no chunk is written.
func keepVersionTx(ctx context.Context, tx *sql.Tx, old Node, now time.Time) error {
	res, err := tx.ExecContext(ctx, `INSERT INTO file_versions(node_id, user_id, author_id, size, mode, mtime_ns, file_hash, content_md5, content_sha1, saved_ns) VALUES (?,?,?,?,?,?,?,?,?,?)`,
		old.ID, old.UserID, old.UserID, old.Size, old.Mode, old.ModTime.UnixNano(), old.FileHash, nullStr(old.MD5), nullStr(old.SHA1), now.UnixNano())
	if err != nil {
		return err
	}
	vid, err := res.LastInsertId()
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO version_chunks(version_id, idx, chunk_id) SELECT ?, idx, chunk_id FROM file_chunks WHERE node_id = ?`, vid, old.ID)
	return err
}

const versionCols = `id, node_id, user_id, author_id, size, mode, mtime_ns, file_hash, ifnull(content_md5, ''), ifnull(content_sha1, ''), saved_ns`

func scanVersion(r rowScanner) (Version, error) {
	var v Version
	var mtime, saved int64
	err := r.Scan(&v.ID, &v.NodeID, &v.UserID, &v.Author, &v.Size, &v.Mode, &mtime, &v.FileHash, &v.MD5, &v.SHA1, &saved)
	v.ModTime, v.Saved = time.Unix(0, mtime), time.Unix(0, saved)
	return v, err
}

// versionedFile returns uid's file at path; a folder is Invalid.
func versionedFile(ctx context.Context, q querier, op string, uid int64, path string) (Node, error) {
	n, err := stat(ctx, q, op, uid, path)
	if err != nil {
		return Node{}, err
	}
	if n.IsDir {
		return Node{}, errs.E(op, errs.Invalid, path, errors.New("a folder has no versions"))
	}
	return n, nil
}

// versionOf returns version vid of file n; any other is NotFound, the same
// as a version that never was.
func versionOf(ctx context.Context, q querier, op string, n Node, vid int64) (Version, error) {
	v, err := scanVersion(q.QueryRowContext(ctx, `SELECT `+versionCols+` FROM file_versions WHERE id = ? AND node_id = ? AND user_id = ?`, vid, n.ID, n.UserID))
	if errors.Is(err, sql.ErrNoRows) {
		return Version{}, errs.E(op, errs.NotFound, n.Path, fmt.Errorf("no version %d of this file", vid))
	}
	return v, err
}

// FileVersions returns the file at path and its versions, newest first.
func (s *SQLStore) FileVersions(ctx context.Context, uid int64, path string) (Node, []Version, error) {
	const op = "meta.FileVersions"
	n, err := versionedFile(ctx, s.r, op, uid, path)
	if err != nil {
		return Node{}, nil, err
	}
	rows, err := s.r.QueryContext(ctx, `SELECT `+versionCols+` FROM file_versions WHERE node_id = ? ORDER BY id DESC`, n.ID)
	vs, err := scanAll(rows, err, scanVersion)
	return n, vs, wrap(op, path, err)
}

// Version returns version vid of the file at path with its chunks.
func (s *SQLStore) Version(ctx context.Context, uid int64, path string, vid int64) (Version, []FileChunk, error) {
	const op = "meta.Version"
	n, err := versionedFile(ctx, s.r, op, uid, path)
	if err != nil {
		return Version{}, nil, err
	}
	v, err := versionOf(ctx, s.r, op, n, vid)
	if err != nil {
		return Version{}, nil, wrap(op, path, err)
	}
	rows, err := s.r.QueryContext(ctx, `SELECT vc.idx, c.id, c.sha256, c.md5, c.size FROM version_chunks vc JOIN chunks c ON c.id = vc.chunk_id WHERE vc.version_id = ? ORDER BY vc.idx`, vid)
	var off int64
	cs, err := scanAll(rows, err, func(r rowScanner) (FileChunk, error) {
		var fc FileChunk
		err := r.Scan(&fc.Index, &fc.ID, &fc.SHA256, &fc.MD5, &fc.Size)
		fc.Offset = off
		off += fc.Size
		return fc, err
	})
	return v, cs, wrap(op, path, err)
}

// RestoreVersionTx makes version vid the file's content inside tx.
func (s *SQLStore) RestoreVersionTx(ctx context.Context, tx *Tx, uid int64, path string, vid int64, mtime time.Time, maxGrowth int64) (Node, int64, error) {
	const op = "meta.RestoreVersion"
	var n Node
	var delta int64
	err := func() error {
		cur, err := versionedFile(ctx, tx.tx, op, uid, path)
		if err != nil {
			return err
		}
		v, err := versionOf(ctx, tx.tx, op, cur, vid)
		if err != nil {
			return err
		}
		delta = v.Size - cur.Size
		if maxGrowth >= 0 && delta > maxGrowth {
			return errs.E(op, errs.Quota, path, fmt.Errorf("quota exceeded: the restore needs %d bytes, %d were reserved", delta, maxGrowth))
		}
		if keepsVersion(cur, v.FileHash, v.Size) {
			if err := keepVersionTx(ctx, tx.tx, cur, s.now()); err != nil {
				return err
			}
		}
		if _, err := tx.tx.ExecContext(ctx, `DELETE FROM file_chunks WHERE node_id = ?`, cur.ID); err != nil {
			return err
		}
		if _, err := tx.tx.ExecContext(ctx, `INSERT INTO file_chunks(node_id, idx, chunk_id) SELECT ?, idx, chunk_id FROM version_chunks WHERE version_id = ?`, cur.ID, vid); err != nil {
			return err
		}
		// The restored content is new to whoever synced the file: a new
		// modification time, so no client takes it for the one it has.
		if _, err := tx.tx.ExecContext(ctx, `UPDATE nodes SET size = ?, mtime_ns = ?, file_hash = ?, content_md5 = ?, content_sha1 = ? WHERE id = ?`,
			v.Size, mtime.UnixNano(), v.FileHash, nullStr(v.MD5), nullStr(v.SHA1), cur.ID); err != nil {
			return err
		}
		if _, err := tx.tx.ExecContext(ctx, `DELETE FROM file_versions WHERE id = ?`, vid); err != nil {
			return err
		}
		if err := addFinished(ctx, tx.tx, op, uid, delta, path); err != nil {
			return err
		}
		n = cur
		n.Size, n.FileHash, n.MD5, n.SHA1, n.ModTime = v.Size, v.FileHash, v.MD5, v.SHA1, time.Unix(0, mtime.UnixNano())
		return nil
	}()
	if err != nil {
		return Node{}, 0, wrap(op, path, err)
	}
	return n, delta, nil
}

// DeleteVersion removes version vid of the file at path.
func (s *SQLStore) DeleteVersion(ctx context.Context, uid int64, path string, vid int64) error {
	const op = "meta.DeleteVersion"
	return wrap(op, path, s.tx(ctx, func(tx *sql.Tx) error {
		n, err := versionedFile(ctx, tx, op, uid, path)
		if err != nil {
			return err
		}
		if _, err := versionOf(ctx, tx, op, n, vid); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM file_versions WHERE id = ?`, vid)
		return err
	}))
}

// OldestVersions returns uid's (0: anyone's) versions oldest first: ids
// grow with the store's clock, so id order is saving order.
func (s *SQLStore) OldestVersions(ctx context.Context, uid int64, afterID int64, limit int) ([]Version, error) {
	q, args := `SELECT `+versionCols+` FROM file_versions WHERE id > ? ORDER BY id LIMIT ?`, []any{afterID, limit}
	if uid != 0 {
		q, args = `SELECT `+versionCols+` FROM file_versions WHERE user_id = ? AND id > ? ORDER BY id LIMIT ?`, []any{uid, afterID, limit}
	}
	rows, err := s.r.QueryContext(ctx, q, args...)
	vs, err := scanAll(rows, err, scanVersion)
	return vs, wrap("meta.OldestVersions", "", err)
}

// VersionedFiles returns ids of files that have versions.
func (s *SQLStore) VersionedFiles(ctx context.Context, afterID int64, limit int) ([]int64, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT DISTINCT node_id FROM file_versions WHERE node_id > ? ORDER BY node_id LIMIT ?`, afterID, limit)
	ids, err := scanAll(rows, err, func(r rowScanner) (int64, error) {
		var id int64
		return id, r.Scan(&id)
	})
	return ids, wrap("meta.VersionedFiles", "", err)
}

// NodeVersions returns the versions of file nodeID, oldest first.
func (s *SQLStore) NodeVersions(ctx context.Context, nodeID int64) ([]Version, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+versionCols+` FROM file_versions WHERE node_id = ? ORDER BY id`, nodeID)
	vs, err := scanAll(rows, err, scanVersion)
	return vs, wrap("meta.NodeVersions", "", err)
}

// ExpungeVersion removes uid's version vid.
func (s *SQLStore) ExpungeVersion(ctx context.Context, uid int64, vid int64) (bool, error) {
	res, err := s.w.ExecContext(ctx, `DELETE FROM file_versions WHERE id = ? AND user_id = ?`, vid, uid)
	if err != nil {
		return false, wrap("meta.ExpungeVersion", "", err)
	}
	n, _ := res.RowsAffected()
	return n > 0, nil
}

// VersionUsage sums each user's versions.
func (s *SQLStore) VersionUsage(ctx context.Context) (map[int64]int64, error) {
	return s.usageByUser(ctx, "meta.VersionUsage", `SELECT user_id, sum(size) FROM file_versions GROUP BY user_id`)
}

// VersionBytes sums the sizes of uid's versions.
func (s *SQLStore) VersionBytes(ctx context.Context, uid int64) (int64, error) {
	var n int64
	err := s.r.QueryRowContext(ctx, `SELECT coalesce(sum(size), 0) FROM file_versions WHERE user_id = ?`, uid).Scan(&n)
	return n, wrap("meta.VersionBytes", "", err)
}

// replaceFileTx is a Move or Copy of file src over file dst (overwrite):
// dst's node survives with src's content, mode, time and dead properties,
// its replaced content kept as a version (keepsVersion), so the file at
// the path keeps its history. A move then takes src's own versions over
// and removes src. The caller checked both are files of uid and distinct.
func replaceFileTx(ctx context.Context, tx *sql.Tx, op string, uid int64, src, dst Node, move bool, now time.Time) error {
	if keepsVersion(dst, src.FileHash, src.Size) {
		if err := keepVersionTx(ctx, tx, dst, now); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM file_chunks WHERE node_id = ?`, dst.ID); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO file_chunks(node_id, idx, chunk_id) SELECT ?, idx, chunk_id FROM file_chunks WHERE node_id = ?`, dst.ID, src.ID); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE nodes SET size = ?, mode = ?, mtime_ns = ?, file_hash = ?, content_md5 = ?, content_sha1 = ? WHERE id = ?`,
		src.Size, src.Mode, src.ModTime.UnixNano(), src.FileHash, nullStr(src.MD5), nullStr(src.SHA1), dst.ID); err != nil {
		return err
	}
	// The dead properties are the source's, as for any MOVE or COPY.
	var before, after int64
	propBytes := func(n *int64) error {
		return tx.QueryRowContext(ctx, `SELECT `+propBytesSQL+` FROM props WHERE node_id = ?`, dst.ID).Scan(n)
	}
	if err := propBytes(&before); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM props WHERE node_id = ?`, dst.ID); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO props(node_id, ns, name, value, lang) SELECT ?, ns, name, value, lang FROM props WHERE node_id = ?`, dst.ID, src.ID); err != nil {
		return err
	}
	if err := propBytes(&after); err != nil {
		return err
	}
	// A copy adds bytes and is refused past the total; a move frees the
	// source below, and is never refused.
	if err := addUsage(ctx, tx, op, uid, "use_space_meta", after-before, dst.Path, !move, ""); err != nil {
		return err
	}
	if err := addUsage(ctx, tx, op, uid, "use_space_finished", src.Size-dst.Size, dst.Path, !move, ""); err != nil {
		return err
	}
	if !move {
		return touchDirs(ctx, tx, uid, now, vpath.Parent(dst.Path))
	}
	if _, err := tx.ExecContext(ctx, `UPDATE file_versions SET node_id = ? WHERE node_id = ?`, dst.ID, src.ID); err != nil {
		return err
	}
	charge, err := chargeOf(ctx, tx, uid, src)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM nodes WHERE id = ?`, src.ID); err != nil {
		return err
	}
	if err := addMeta(ctx, tx, op, uid, -charge, src.Path, false); err != nil {
		return err
	}
	if err := addFinished(ctx, tx, op, uid, -src.Size, src.Path); err != nil {
		return err
	}
	return touchDirs(ctx, tx, uid, now, vpath.Parent(src.Path), vpath.Parent(dst.Path))
}

// fileOverFile is the start of Move and Copy: when both src and dst are
// regular files and overwrite allows it, the change is a replacement of
// dst's content (replaceFileTx), done here, and replaced is true. Anything
// else (a folder or a symbolic link involved, a free destination, no
// overwrite, src and dst the same) is left to the caller: a link has no
// content to keep as a version, and the surviving node would keep its
// target.
func fileOverFile(ctx context.Context, tx *sql.Tx, op string, uid int64, src, dst string, overwrite, move bool, now time.Time) (replaced bool, err error) {
	if !overwrite || src == dst {
		return false, nil
	}
	sn, err := stat(ctx, tx, op, uid, src)
	if err != nil || !sn.IsFile() {
		return false, nil // prepareDest reports it
	}
	dn, err := stat(ctx, tx, op, uid, dst)
	if err != nil || !dn.IsFile() {
		return false, nil
	}
	return true, replaceFileTx(ctx, tx, op, uid, sn, dn, move, now)
}
