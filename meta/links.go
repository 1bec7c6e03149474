package meta

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"netdisk/errs"
)

// LinkPerm is what a public link lets its holder do in the linked node.
type LinkPerm int

const (
	// LinkRead lets the holder list and download, nothing else.
	LinkRead LinkPerm = 0
	// LinkUpload ("file drop") lets the holder add files to the folder and
	// nothing else: it never lists nor serves what is there.
	LinkUpload LinkPerm = 1
	// LinkReadWrite lets the holder read, upload, rename and delete inside
	// the folder.
	LinkReadWrite LinkPerm = 2
)

// String is the permission's name on the wire and in the CLI.
func (p LinkPerm) String() string {
	switch p {
	case LinkRead:
		return "read"
	case LinkUpload:
		return "upload"
	case LinkReadWrite:
		return "read-write"
	}
	return "unknown"
}

// Link is a public link: whoever holds its token reaches the node NodeID
// of user UserID (and, for a folder, everything below it) with Perm. The
// link names the node by id, so it follows the node across moves; it ends
// with the node (deleted, or moved into the trash) and with its owner.
type Link struct {
	ID        int64
	UserID    int64
	NodeID    int64
	TokenHash string // hex SHA-256 of the token: the store never holds a usable one
	PassHash  string // bcrypt, as User.PassHash; "" for a link without a password
	Perm      LinkPerm
	Expires   time.Time // zero: never
	// MaxDownloads bounds Downloads (0: no bound); a link whose downloads
	// reached it serves no more.
	MaxDownloads int64
	Downloads    int64
	Created      time.Time
	Last         time.Time // last use as last recorded (UseLink); zero: never used
	// Path is where the node is now, as the store answers (not stored).
	Path string
}

// Links are the users' public links, kept in the store so that a link made
// or revoked through one node is made or revoked on every node sharing it:
// the drive looks a link up on every request rather than caching it.
type Links interface {
	// CreateLink stores l (its ID, Downloads, Last and Path are ignored)
	// and returns it as stored. A node that is not user l.UserID's live
	// node is NotFound; a token hash already stored is Exists.
	CreateLink(ctx context.Context, l Link) (Link, error)
	// LinkByToken returns the link with that token hash and where its
	// node is now; NotFound when there is none.
	LinkByToken(ctx context.Context, tokenHash string) (Link, error)
	// UserLinks lists user uid's links, oldest first, with their paths.
	UserLinks(ctx context.Context, uid int64) ([]Link, error)
	// UseLink records a use of link id at now (the last use never moves
	// back). With download it also counts one download, atomically with
	// the check against MaxDownloads: a link whose downloads are used up,
	// or that is gone, is NotFound and counts nothing.
	UseLink(ctx context.Context, id int64, now time.Time, download bool) error
	// DeleteLink revokes user uid's link id; NotFound when they have none
	// by that id (another user's link included).
	DeleteLink(ctx context.Context, uid, id int64) error
	// UpdateLink sets the password hash, permission and expiry of user
	// uid's link id to l's (the rest stays) and returns the link as
	// stored; NotFound when they have none by that id.
	UpdateLink(ctx context.Context, uid, id int64, l Link) (Link, error)
}

var _ Links = (*SQLStore)(nil)

const linkCols = `l.id, l.user_id, l.node_id, l.token_hash, l.pass_hash, l.perm, l.expires_ns, l.max_downloads, l.downloads, l.created_ns, l.last_ns, n.path`

func scanLink(r rowScanner) (Link, error) {
	var l Link
	var expires, created, last int64
	err := r.Scan(&l.ID, &l.UserID, &l.NodeID, &l.TokenHash, &l.PassHash, &l.Perm, &expires, &l.MaxDownloads, &l.Downloads, &created, &last, &l.Path)
	if expires != 0 {
		l.Expires = time.Unix(0, expires)
	}
	l.Created = time.Unix(0, created)
	if last != 0 {
		l.Last = time.Unix(0, last)
	}
	return l, err
}

// CreateLink stores a link (Links).
func (s *SQLStore) CreateLink(ctx context.Context, l Link) (Link, error) {
	const op = "meta.CreateLink"
	var expires int64
	if !l.Expires.IsZero() {
		expires = l.Expires.UnixNano()
	}
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var path string
		err := tx.QueryRowContext(ctx, `SELECT path FROM nodes WHERE user_id = ? AND id = ? AND `+LiveNodes, l.UserID, l.NodeID).Scan(&path)
		if errors.Is(err, sql.ErrNoRows) {
			return errs.E(op, errs.NotFound, "", errors.New("no such file or folder"))
		}
		if err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO links (user_id, node_id, token_hash, pass_hash, perm, expires_ns, max_downloads, downloads, created_ns, last_ns)
			VALUES (?, ?, ?, ?, ?, ?, ?, 0, ?, 0)`,
			l.UserID, l.NodeID, l.TokenHash, l.PassHash, int64(l.Perm), expires, l.MaxDownloads, l.Created.UnixNano())
		if isUnique(err) {
			return errs.E(op, errs.Exists, "", errors.New("a link with that token exists"))
		}
		if err != nil {
			return err
		}
		l.ID, err = res.LastInsertId()
		l.Path, l.Downloads, l.Last = path, 0, time.Time{}
		return err
	})
	if err != nil {
		return Link{}, wrap(op, "", err)
	}
	return l, nil
}

// LinkByToken looks a link up by its token's hash (Links).
func (s *SQLStore) LinkByToken(ctx context.Context, tokenHash string) (Link, error) {
	const op = "meta.LinkByToken"
	l, err := scanLink(s.r.QueryRowContext(ctx, `SELECT `+linkCols+` FROM links l JOIN nodes n ON n.id = l.node_id WHERE l.token_hash = ?`, tokenHash))
	if errors.Is(err, sql.ErrNoRows) {
		return Link{}, errs.E(op, errs.NotFound, "", errors.New("no such link"))
	}
	return l, wrap(op, "", err)
}

// UserLinks lists a user's links (Links).
func (s *SQLStore) UserLinks(ctx context.Context, uid int64) ([]Link, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+linkCols+` FROM links l JOIN nodes n ON n.id = l.node_id WHERE l.user_id = ? ORDER BY l.id`, uid)
	out, err := scanAll(rows, err, scanLink)
	return out, wrap("meta.UserLinks", "", err)
}

// UseLink records a use, counting a download when asked (Links).
func (s *SQLStore) UseLink(ctx context.Context, id int64, now time.Time, download bool) error {
	const op = "meta.UseLink"
	var add int64
	if download {
		add = 1
	}
	ns := now.UnixNano()
	// One statement: two downloads racing for the last one allowed cannot
	// both pass the check.
	res, err := s.w.ExecContext(ctx, `UPDATE links SET downloads = downloads + ?, last_ns = CASE WHEN last_ns < ? THEN ? ELSE last_ns END
		WHERE id = ? AND (? = 0 OR max_downloads = 0 OR downloads < max_downloads)`, add, ns, ns, id, add)
	if err != nil {
		return wrap(op, "", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return errs.E(op, errs.NotFound, "", errors.New("no such link"))
	}
	return nil
}

// DeleteLink revokes one of a user's links (Links).
func (s *SQLStore) DeleteLink(ctx context.Context, uid, id int64) error {
	const op = "meta.DeleteLink"
	res, err := s.w.ExecContext(ctx, `DELETE FROM links WHERE user_id = ? AND id = ?`, uid, id)
	if err != nil {
		return wrap(op, "", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return errs.E(op, errs.NotFound, "", errors.New("no such link"))
	}
	return nil
}

// UpdateLink changes a link's password, permission and expiry (Links).
func (s *SQLStore) UpdateLink(ctx context.Context, uid, id int64, l Link) (Link, error) {
	const op = "meta.UpdateLink"
	var expires int64
	if !l.Expires.IsZero() {
		expires = l.Expires.UnixNano()
	}
	res, err := s.w.ExecContext(ctx, `UPDATE links SET pass_hash = ?, perm = ?, expires_ns = ? WHERE user_id = ? AND id = ?`,
		l.PassHash, int64(l.Perm), expires, uid, id)
	if err != nil {
		return Link{}, wrap(op, "", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return Link{}, errs.E(op, errs.NotFound, "", errors.New("no such link"))
	}
	out, err := scanLink(s.r.QueryRowContext(ctx, `SELECT `+linkCols+` FROM links l JOIN nodes n ON n.id = l.node_id WHERE l.user_id = ? AND l.id = ?`, uid, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Link{}, errs.E(op, errs.NotFound, "", errors.New("no such link")) // revoked meanwhile
	}
	return out, wrap(op, "", err)
}

// dropLinksTx ends the links to path and to everything below it, as the
// subtree leaves the user's tree for the trash: a restore brings the files
// back, not the links (whoever held one was told the file is gone).
func dropLinksTx(ctx context.Context, tx *sql.Tx, uid int64, path string) error {
	cond, args := subtree(path)
	// From the user's links (few) to their nodes, not from the subtree's
	// nodes (maybe 100,000) to their links: a folder's delete to the trash
	// must not walk the folder once more for this.
	_, err := tx.ExecContext(ctx, `DELETE FROM links WHERE user_id = ? AND EXISTS (SELECT 1 FROM nodes WHERE nodes.id = links.node_id AND (path = ? OR `+cond+`))`,
		append([]any{uid, path}, args...)...)
	return err
}
