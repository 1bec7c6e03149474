package meta

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"netdisk/errs"
	"netdisk/vpath"
)

// Shares between users (migration 022). A share names one node of its
// owner's tree by id, so it follows the node across moves, stops answering
// while the node is in the trash and dies with it when it is expunged; its
// recipient is a user or an admin-kept group; it allows writes or not.
// Each recipient sees it at an entry of their own tree: a folder row of
// theirs (the "mount" row, share_mounts), charged like any entry, which
// they may rename and move, which only changes their view. The drive
// resolves every path through these entries (drive/shares.go); the store
// only keeps them, and never follows one on its own: every Tree method
// stays scoped to its user.

// Group is an admin-kept set of users a share may name.
type Group struct {
	ID      int64
	Name    string
	Created time.Time
	Members []string // user names, sorted
}

// Share is one node of its owner's shared with a user or a group.
type Share struct {
	ID      int64
	OwnerID int64
	NodeID  int64
	ToUser  int64 // exactly one of ToUser and ToGroup is set
	ToGroup int64
	Write   bool
	Created time.Time
	// Filled by the reads: the owner's name, the recipient's (user or
	// group) name and the node's path in the owner's tree ("" while the
	// node is in the trash).
	OwnerName, ToName, Path string
}

// Mount is a recipient's entry of a share in their tree.
type Mount struct {
	NodeID int64  // the recipient's entry (a folder row of theirs)
	Path   string // where it is in their tree ("#…" while in their trash)
	UserID int64
	// ShareID is 0 for an entry whose share is gone (revoked by cascade:
	// its node expunged, its owner or group deleted): the drive hides it
	// and removes it.
	ShareID   int64
	OwnerID   int64
	OwnerName string
	Target    int64  // the shared node, in the owner's tree
	TargetDir bool   // whether the shared node is a folder
	TargetAt  string // its path there; "#…" while in the owner's trash
	Write     bool
	Group     bool // a share with a group, not with the user alone
}

// Live reports whether the mount answers: its share exists and both the
// entry and the shared node are out of the trash.
func (m Mount) Live() bool {
	return m.ShareID != 0 && strings.HasPrefix(m.Path, "/") && strings.HasPrefix(m.TargetAt, "/")
}

// SharesStore keeps groups, shares and the recipients' entries. Methods
// ending in Tx run inside the drive's transaction and return how they moved
// the recipient's metadata charge (an entry is charged as any folder; an
// entry removed from the trash was no longer charged).
type SharesStore interface {
	// CreateGroup adds a group; a name taken (ignoring case) is Exists.
	CreateGroup(ctx context.Context, name string, now time.Time) (Group, error)
	// DeleteGroup removes a group; its shares go with it (their entries
	// turn dead: Mount.ShareID 0). NotFound for an unknown name.
	DeleteGroup(ctx context.Context, name string) error
	// GroupByName finds a group with its members, ignoring case.
	GroupByName(ctx context.Context, name string) (Group, error)
	// Groups lists every group by name with its members.
	Groups(ctx context.Context) ([]Group, error)
	// AddGroupMemberTx adds uid to group gid (already a member: success)
	// and returns the group's shares of others (ID and Path, "" while in
	// the trash), for the caller to mount.
	AddGroupMemberTx(ctx context.Context, tx *Tx, gid, uid int64) ([]Share, error)
	// RemoveGroupMemberTx removes uid from gid with uid's entries of the
	// group's shares, in the same transaction: the next resolution finds
	// none. Not a member is NotFound.
	RemoveGroupMemberTx(ctx context.Context, tx *Tx, gid, uid int64) (int64, error)
	// CreateShareTx records s (Created and the ids set) and returns its id.
	// The node must be the owner's and live (NotFound otherwise); the same
	// node shared with the same recipient again is Exists; a share with
	// its own owner is Invalid.
	CreateShareTx(ctx context.Context, tx *Tx, s Share) (int64, error)
	// MountShareTx gives uid an entry of share id in their root, named
	// name or, when that is taken, "name (2)", "name (3)"… It returns the
	// entry and its charge (not checked against uid's quota: the recipient
	// did not ask for it, and an entry is small).
	MountShareTx(ctx context.Context, tx *Tx, id, uid int64, name string, mtime time.Time) (Mount, int64, error)
	// UnmountTx removes uid's entry nodeID (NotFound when it is not one).
	UnmountTx(ctx context.Context, tx *Tx, uid, nodeID int64) (int64, error)
	// DeleteShareTx revokes owner's share id with every recipient's
	// entry, and returns how each recipient's charge moved, by user id.
	DeleteShareTx(ctx context.Context, tx *Tx, owner, id int64) (map[int64]int64, error)
	// SetShareWrite changes whether owner's share id allows writes.
	SetShareWrite(ctx context.Context, owner, id int64, write bool) error
	// ShareByID returns owner's share id (another owner's is NotFound).
	ShareByID(ctx context.Context, owner, id int64) (Share, error)
	// SharesOf lists owner's shares by id.
	SharesOf(ctx context.Context, owner int64) ([]Share, error)
	// Mounts lists uid's entries, dead ones included, by id. It is read
	// on every request that names a path, so it is one indexed query.
	Mounts(ctx context.Context, uid int64) ([]Mount, error)
}

var _ SharesStore = (*SQLStore)(nil)

// CreateGroup adds a group.
func (s *SQLStore) CreateGroup(ctx context.Context, name string, now time.Time) (Group, error) {
	const op = "meta.CreateGroup"
	g := Group{Name: name, Created: time.Unix(0, now.UnixNano())}
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM user_groups WHERE name = ? COLLATE NOCASE`, name).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return errs.E(op, errs.Exists, "", fmt.Errorf("a group named %q exists", name))
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO user_groups (name, created_ns) VALUES (?, ?)`, name, now.UnixNano())
		if isUnique(err) {
			return errs.E(op, errs.Exists, "", fmt.Errorf("a group named %q exists", name))
		}
		if err != nil {
			return err
		}
		g.ID, err = res.LastInsertId()
		return err
	})
	return g, wrap(op, "", err)
}

// DeleteGroup removes a group.
func (s *SQLStore) DeleteGroup(ctx context.Context, name string) error {
	const op = "meta.DeleteGroup"
	err := s.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM user_groups WHERE name = ? COLLATE NOCASE`, name)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return errs.E(op, errs.NotFound, "", fmt.Errorf("no group named %q", name))
		}
		return nil
	})
	return wrap(op, "", err)
}

// GroupByName finds a group.
func (s *SQLStore) GroupByName(ctx context.Context, name string) (Group, error) {
	const op = "meta.GroupByName"
	var g Group
	var created int64
	err := s.r.QueryRowContext(ctx, `SELECT id, name, created_ns FROM user_groups WHERE name = ? COLLATE NOCASE`, name).Scan(&g.ID, &g.Name, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return Group{}, errs.E(op, errs.NotFound, "", fmt.Errorf("no group named %q", name))
	}
	if err != nil {
		return Group{}, wrap(op, "", err)
	}
	g.Created = time.Unix(0, created)
	g.Members, err = s.groupMembers(ctx, g.ID)
	return g, wrap(op, "", err)
}

func (s *SQLStore) groupMembers(ctx context.Context, gid int64) ([]string, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT u.name FROM group_members m JOIN users u ON u.id = m.user_id WHERE m.group_id = ? ORDER BY u.name`, gid)
	return scanAll(rows, err, func(r rowScanner) (string, error) {
		var n string
		return n, r.Scan(&n)
	})
}

// Groups lists the groups.
func (s *SQLStore) Groups(ctx context.Context) ([]Group, error) {
	const op = "meta.Groups"
	rows, err := s.r.QueryContext(ctx, `SELECT id, name, created_ns FROM user_groups ORDER BY name`)
	gs, err := scanAll(rows, err, func(r rowScanner) (Group, error) {
		var g Group
		var created int64
		err := r.Scan(&g.ID, &g.Name, &created)
		g.Created = time.Unix(0, created)
		return g, err
	})
	if err != nil {
		return nil, wrap(op, "", err)
	}
	for i := range gs {
		if gs[i].Members, err = s.groupMembers(ctx, gs[i].ID); err != nil {
			return nil, wrap(op, "", err)
		}
	}
	return gs, nil
}

// AddGroupMemberTx adds a member.
func (s *SQLStore) AddGroupMemberTx(ctx context.Context, tx *Tx, gid, uid int64) ([]Share, error) {
	const op = "meta.AddGroupMember"
	var n int
	if err := tx.tx.QueryRowContext(ctx, `SELECT count(*) FROM group_members WHERE group_id = ? AND user_id = ?`, gid, uid).Scan(&n); err != nil {
		return nil, wrap(op, "", err)
	}
	if n == 0 {
		if _, err := tx.tx.ExecContext(ctx, `INSERT INTO group_members (group_id, user_id) VALUES (?, ?)`, gid, uid); err != nil {
			return nil, wrap(op, "", err)
		}
	}
	rows, err := tx.tx.QueryContext(ctx, `SELECT s.id, n.path FROM shares s JOIN nodes n ON n.id = s.node_id WHERE s.to_group = ? AND s.owner_id <> ? ORDER BY s.id`, gid, uid)
	out, err := scanAll(rows, err, func(r rowScanner) (Share, error) {
		var sh Share
		err := r.Scan(&sh.ID, &sh.Path)
		if !strings.HasPrefix(sh.Path, "/") {
			sh.Path = ""
		}
		return sh, err
	})
	return out, wrap(op, "", err)
}

// RemoveGroupMemberTx removes a member and their entries of the group's
// shares.
func (s *SQLStore) RemoveGroupMemberTx(ctx context.Context, tx *Tx, gid, uid int64) (int64, error) {
	const op = "meta.RemoveGroupMember"
	res, err := tx.tx.ExecContext(ctx, `DELETE FROM group_members WHERE group_id = ? AND user_id = ?`, gid, uid)
	if err != nil {
		return 0, wrap(op, "", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return 0, errs.E(op, errs.NotFound, "", errors.New("not a member of the group"))
	}
	rows, err := tx.tx.QueryContext(ctx, `SELECT m.node_id FROM share_mounts m JOIN shares s ON s.id = m.share_id WHERE m.user_id = ? AND s.to_group = ?`, uid, gid)
	ids, err := scanAll(rows, err, func(r rowScanner) (int64, error) {
		var id int64
		return id, r.Scan(&id)
	})
	if err != nil {
		return 0, wrap(op, "", err)
	}
	var delta int64
	for _, id := range ids {
		d, err := dropEntry(ctx, tx.tx, op, uid, id)
		if err != nil {
			return 0, err
		}
		delta += d
	}
	return delta, nil
}

// CreateShareTx records a share.
func (s *SQLStore) CreateShareTx(ctx context.Context, tx *Tx, sh Share) (int64, error) {
	const op = "meta.CreateShare"
	if (sh.ToUser == 0) == (sh.ToGroup == 0) {
		return 0, errs.E(op, errs.Invalid, "", errors.New("a share names one user or one group"))
	}
	if sh.ToUser == sh.OwnerID {
		return 0, errs.E(op, errs.Invalid, "", errors.New("cannot share with yourself"))
	}
	var n int
	if err := tx.tx.QueryRowContext(ctx, `SELECT count(*) FROM nodes WHERE id = ? AND user_id = ? AND `+LiveNodes, sh.NodeID, sh.OwnerID).Scan(&n); err != nil {
		return 0, wrap(op, "", err)
	}
	if n == 0 {
		return 0, errs.E(op, errs.NotFound, "", errors.New("no such file or folder"))
	}
	var toUser, toGroup any
	if sh.ToUser != 0 {
		toUser = sh.ToUser
	} else {
		toGroup = sh.ToGroup
	}
	res, err := tx.tx.ExecContext(ctx, `INSERT INTO shares (owner_id, node_id, to_user, to_group, can_write, created_ns) VALUES (?, ?, ?, ?, ?, ?)`,
		sh.OwnerID, sh.NodeID, toUser, toGroup, sh.Write, sh.Created.UnixNano())
	if isUnique(err) {
		return 0, errs.E(op, errs.Exists, "", errors.New("already shared with them"))
	}
	if err != nil {
		return 0, wrap(op, "", err)
	}
	id, err := res.LastInsertId()
	return id, wrap(op, "", err)
}

// MountShareTx gives a recipient their entry of a share.
func (s *SQLStore) MountShareTx(ctx context.Context, tx *Tx, id, uid int64, name string, mtime time.Time) (Mount, int64, error) {
	const op = "meta.MountShare"
	if c, err := vpath.Clean("/" + name); err != nil || vpath.Parent(c) != "/" {
		return Mount{}, 0, errs.E(op, errs.Invalid, name, errors.New("not a name"))
	}
	for i := 1; i <= 1000; i++ {
		p := "/" + numbered(name, i)
		res, err := tx.tx.ExecContext(ctx, `INSERT INTO nodes(user_id, path, parent, name, is_dir, mode, mtime_ns) VALUES (?,?,'/',?,1,0,?) ON CONFLICT(user_id, path) DO NOTHING`,
			uid, p, vpath.Base(p), mtime.UnixNano())
		if err != nil {
			return Mount{}, 0, wrap(op, p, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			continue
		}
		// The id of the row just made: LastInsertId is not reliable after
		// an upsert on every engine, the (user, path) key is.
		var nid int64
		if err := tx.tx.QueryRowContext(ctx, `SELECT id FROM nodes WHERE user_id = ? AND path = ?`, uid, p).Scan(&nid); err != nil {
			return Mount{}, 0, wrap(op, p, err)
		}
		if _, err := tx.tx.ExecContext(ctx, `INSERT INTO share_mounts (node_id, user_id, share_id) VALUES (?, ?, ?)`, nid, uid, id); err != nil {
			return Mount{}, 0, wrap(op, p, err)
		}
		if err := touchDirs(ctx, tx.tx, uid, mtime, "/"); err != nil {
			return Mount{}, 0, wrap(op, p, err)
		}
		c := EntryCharge(vpath.Base(p))
		if err := addMeta(ctx, tx.tx, op, uid, c, p, false); err != nil {
			return Mount{}, 0, err
		}
		m, err := mountRow(ctx, tx.tx, uid, nid)
		return m, c, wrap(op, p, err)
	}
	return Mount{}, 0, errs.E(op, errs.Exists, name, errors.New("no free name for the share"))
}

// numbered is name for i == 1, else name with " (i)" before its extension.
func numbered(name string, i int) string {
	if i == 1 {
		return name
	}
	base, ext := name, ""
	if j := strings.LastIndexByte(name, '.'); j > 0 {
		base, ext = name[:j], name[j:]
	}
	return fmt.Sprintf("%s (%d)%s", base, i, ext)
}

// UnmountTx removes a recipient's entry.
func (s *SQLStore) UnmountTx(ctx context.Context, tx *Tx, uid, nodeID int64) (int64, error) {
	return dropEntry(ctx, tx.tx, "meta.Unmount", uid, nodeID)
}

// dropEntry deletes uid's entry nodeID (its mount row goes by cascade) and
// gives back its charge when it was live (the trash holds no charge).
func dropEntry(ctx context.Context, tx *sql.Tx, op string, uid, nodeID int64) (int64, error) {
	var p string
	err := tx.QueryRowContext(ctx, `SELECT n.path FROM share_mounts m JOIN nodes n ON n.id = m.node_id WHERE m.node_id = ? AND m.user_id = ?`, nodeID, uid).Scan(&p)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, errs.E(op, errs.NotFound, "", errors.New("not a share's entry"))
	}
	if err != nil {
		return 0, wrap(op, "", err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM nodes WHERE user_id = ? AND id = ?`, uid, nodeID); err != nil {
		return 0, wrap(op, p, err)
	}
	if !strings.HasPrefix(p, "/") {
		return 0, nil
	}
	c := EntryCharge(vpath.Base(p))
	if err := addMeta(ctx, tx, op, uid, -c, p, false); err != nil {
		return 0, err
	}
	return -c, nil
}

// DeleteShareTx revokes a share with its entries.
func (s *SQLStore) DeleteShareTx(ctx context.Context, tx *Tx, owner, id int64) (map[int64]int64, error) {
	const op = "meta.DeleteShare"
	var n int
	if err := tx.tx.QueryRowContext(ctx, `SELECT count(*) FROM shares WHERE id = ? AND owner_id = ?`, id, owner).Scan(&n); err != nil {
		return nil, wrap(op, "", err)
	}
	if n == 0 {
		return nil, errs.E(op, errs.NotFound, "", errors.New("no such share"))
	}
	type entry struct{ uid, node int64 }
	rows, err := tx.tx.QueryContext(ctx, `SELECT user_id, node_id FROM share_mounts WHERE share_id = ?`, id)
	es, err := scanAll(rows, err, func(r rowScanner) (entry, error) {
		var e entry
		return e, r.Scan(&e.uid, &e.node)
	})
	if err != nil {
		return nil, wrap(op, "", err)
	}
	deltas := map[int64]int64{}
	for _, e := range es {
		d, err := dropEntry(ctx, tx.tx, op, e.uid, e.node)
		if err != nil {
			return nil, err
		}
		deltas[e.uid] += d
	}
	if _, err := tx.tx.ExecContext(ctx, `DELETE FROM shares WHERE id = ?`, id); err != nil {
		return nil, wrap(op, "", err)
	}
	return deltas, nil
}

// SetShareWrite changes a share's write flag.
func (s *SQLStore) SetShareWrite(ctx context.Context, owner, id int64, write bool) error {
	const op = "meta.SetShareWrite"
	err := s.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE shares SET can_write = ? WHERE id = ? AND owner_id = ?`, write, id, owner)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return errs.E(op, errs.NotFound, "", errors.New("no such share"))
		}
		return nil
	})
	return wrap(op, "", err)
}

const shareCols = `s.id, s.owner_id, s.node_id, ifnull(s.to_user, 0), ifnull(s.to_group, 0), s.can_write, s.created_ns,
	o.name, ifnull(ru.name, ifnull(rg.name, '')), n.path`

const shareFrom = ` FROM shares s JOIN users o ON o.id = s.owner_id JOIN nodes n ON n.id = s.node_id
	LEFT JOIN users ru ON ru.id = s.to_user LEFT JOIN user_groups rg ON rg.id = s.to_group`

func scanShare(r rowScanner) (Share, error) {
	var sh Share
	var created int64
	err := r.Scan(&sh.ID, &sh.OwnerID, &sh.NodeID, &sh.ToUser, &sh.ToGroup, &sh.Write, &created, &sh.OwnerName, &sh.ToName, &sh.Path)
	sh.Created = time.Unix(0, created)
	if !strings.HasPrefix(sh.Path, "/") {
		sh.Path = ""
	}
	return sh, err
}

// ShareByID returns one of owner's shares.
func (s *SQLStore) ShareByID(ctx context.Context, owner, id int64) (Share, error) {
	const op = "meta.ShareByID"
	sh, err := scanShare(s.r.QueryRowContext(ctx, `SELECT `+shareCols+shareFrom+` WHERE s.id = ? AND s.owner_id = ?`, id, owner))
	if errors.Is(err, sql.ErrNoRows) {
		return Share{}, errs.E(op, errs.NotFound, "", errors.New("no such share"))
	}
	return sh, wrap(op, "", err)
}

// SharesOf lists an owner's shares.
func (s *SQLStore) SharesOf(ctx context.Context, owner int64) ([]Share, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+shareCols+shareFrom+` WHERE s.owner_id = ? ORDER BY s.id`, owner)
	out, err := scanAll(rows, err, scanShare)
	return out, wrap("meta.SharesOf", "", err)
}

const mountCols = `m.node_id, e.path, m.user_id, ifnull(s.id, 0), ifnull(s.owner_id, 0), ifnull(o.name, ''),
	ifnull(s.node_id, 0), ifnull(t.is_dir, 0), ifnull(t.path, '#'), ifnull(s.can_write, 0),
	CASE WHEN s.to_group IS NULL THEN 0 ELSE 1 END`

// mountsSQL lists a user's mounts (Mounts), every request's first look-up.
const mountsSQL = `SELECT ` + mountCols + mountFrom + ` WHERE m.user_id = ? ORDER BY m.node_id`

const mountFrom = ` FROM share_mounts m JOIN nodes e ON e.id = m.node_id LEFT JOIN shares s ON s.id = m.share_id
	LEFT JOIN users o ON o.id = s.owner_id LEFT JOIN nodes t ON t.id = s.node_id`

func scanMount(r rowScanner) (Mount, error) {
	var m Mount
	err := r.Scan(&m.NodeID, &m.Path, &m.UserID, &m.ShareID, &m.OwnerID, &m.OwnerName, &m.Target, &m.TargetDir, &m.TargetAt, &m.Write, &m.Group)
	return m, err
}

func mountRow(ctx context.Context, q querier, uid, nodeID int64) (Mount, error) {
	return scanMount(q.QueryRowContext(ctx, `SELECT `+mountCols+mountFrom+` WHERE m.user_id = ? AND m.node_id = ?`, uid, nodeID))
}

// Mounts lists a recipient's entries.
func (s *SQLStore) Mounts(ctx context.Context, uid int64) ([]Mount, error) {
	rows, err := s.r.QueryContext(ctx, mountsSQL, uid)
	out, err := scanAll(rows, err, scanMount)
	return out, wrap("meta.Mounts", "", err)
}
