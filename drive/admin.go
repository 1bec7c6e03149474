package drive

import (
	"context"
	"fmt"
	"sync"

	"netdisk/errs"
	"netdisk/meta"
)

// userAdminMu serialises the check-then-delete of DeleteUserAs, so two admins
// deleting each other at once cannot both pass the "another admin remains"
// check. One Drive serves a data directory per process, so a package lock is
// enough and keeps Drive's own struct untouched.
var userAdminMu sync.Mutex

// DeleteUserAs removes a user on behalf of actor, refusing the deletions that
// would lock everyone out: an admin deleting their own account (they would
// lose the session they are using) and removing the last admin (nobody could
// manage users any more). Both are Conflict: the request is valid, the state
// forbids it.
func (d *Drive) DeleteUserAs(ctx context.Context, actor meta.User, name string) error {
	const op = "drive.DeleteUser"
	userAdminMu.Lock()
	defer userAdminMu.Unlock()
	u, err := d.meta.UserByName(ctx, name)
	if err != nil {
		return err
	}
	if u.ID == actor.ID {
		return errs.E(op, errs.Conflict, "", fmt.Errorf("refusing to delete your own account %q: sign in as another admin to do that", name))
	}
	if u.IsAdmin {
		last, err := d.IsLastAdmin(ctx, u)
		if err != nil {
			return err
		}
		if last {
			return errs.E(op, errs.Conflict, "", fmt.Errorf("refusing to delete %q: it is the last admin", name))
		}
	}
	return d.deleteUser(ctx, u.ID)
}

// IsLastAdmin reports whether u is an admin and no other admin exists.
func (d *Drive) IsLastAdmin(ctx context.Context, u meta.User) (bool, error) {
	if !u.IsAdmin {
		return false, nil
	}
	users, err := d.meta.ListUsers(ctx)
	if err != nil {
		return false, err
	}
	for _, o := range users {
		if o.IsAdmin && o.ID != u.ID {
			return false, nil
		}
	}
	return true, nil
}

// Users lists every account (with their usage), ordered by name.
func (d *Drive) Users(ctx context.Context) ([]meta.User, error) { return d.meta.ListUsers(ctx) }

// User returns one account by name.
func (d *Drive) User(ctx context.Context, name string) (meta.User, error) {
	return d.meta.UserByName(ctx, name)
}

// UserByID returns one account by id (a web session names its user by id:
// ids are never given again, so it can only ever be that account).
func (d *Drive) UserByID(ctx context.Context, id int64) (meta.User, error) {
	return d.meta.UserByID(ctx, id)
}

// WebSessions is the store of the web page's sessions (package web): the
// metadata store, which every node sharing it sees.
func (d *Drive) WebSessions() meta.WebSessions { return d.meta }
