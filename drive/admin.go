package drive

import (
	"context"
	"errors"
	"fmt"

	"netdisk/errs"
	"netdisk/meta"
)

// DeleteUserAs removes a user on behalf of actor, refusing the deletions that
// would lock everyone out: an admin deleting their own account (they would
// lose the session they are using) and removing the last admin (nobody could
// manage users any more). Both are Conflict: the request is valid, the state
// forbids it. The last-admin check is the metadata store's, in the delete's
// own transaction, so it holds across every node sharing the store.
func (d *Drive) DeleteUserAs(ctx context.Context, actor meta.User, name string) error {
	const op = "drive.DeleteUser"
	u, err := d.meta.UserByName(ctx, name)
	if err != nil {
		return err
	}
	if u.ID == actor.ID {
		return errs.E(op, errs.Conflict, "", fmt.Errorf("refusing to delete your own account %q: sign in as another admin to do that", name))
	}
	err = d.deleteUserWith(ctx, u.ID, d.meta.DeleteUserKeepingAdmin)
	if errors.Is(err, meta.ErrLastAdmin) {
		return errs.E(op, errs.Conflict, "", fmt.Errorf("refusing to delete %q: %w", name, meta.ErrLastAdmin))
	}
	return err
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

// LoginFlows returns the store of the Login Flow v2 sign-ins in progress.
func (d *Drive) LoginFlows() meta.LoginFlows { return d.meta }
