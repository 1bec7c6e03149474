package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"netdisk/apitype"
)

// Shares between users and the admin's groups (docs/API.md "Shares
// between users").

// UserShares lists what the signed-in user shares and what is shared with
// them.
func (c *Client) UserShares(ctx context.Context) (apitype.UserShareList, error) {
	var out apitype.UserShareList
	err := c.JSON(ctx, http.MethodGet, "/api/v1/user-shares", nil, nil, &out)
	return out, err
}

// ShareWith shares path with a user or a group (s names one); the same
// share again sets its permission.
func (c *Client) ShareWith(ctx context.Context, s apitype.NewUserShare) (apitype.UserShare, error) {
	var out apitype.UserShare
	err := c.JSON(ctx, http.MethodPost, "/api/v1/user-shares", nil, s, &out)
	return out, err
}

// SetUserShareWrite changes share id's permission.
func (c *Client) SetUserShareWrite(ctx context.Context, id int64, write bool) error {
	return c.JSON(ctx, http.MethodPut, "/api/v1/user-shares/"+strconv.FormatInt(id, 10), nil, apitype.UserShareWrite{Write: write}, nil)
}

// Unshare revokes share id.
func (c *Client) Unshare(ctx context.Context, id int64) error {
	return c.JSON(ctx, http.MethodDelete, "/api/v1/user-shares/"+strconv.FormatInt(id, 10), nil, nil, nil)
}

// LeaveShare removes the signed-in user's entry of a share at path.
func (c *Client) LeaveShare(ctx context.Context, path string) error {
	return c.JSON(ctx, http.MethodPost, "/api/v1/user-shares/leave", nil, apitype.LeaveShare{Path: path}, nil)
}

// AdminGroups lists the groups.
func (c *Client) AdminGroups(ctx context.Context) ([]apitype.Group, error) {
	var out []apitype.Group
	err := c.JSON(ctx, http.MethodGet, "/api/v1/admin/groups", nil, nil, &out)
	return out, err
}

// AdminAddGroup makes a group.
func (c *Client) AdminAddGroup(ctx context.Context, name string) error {
	return c.JSON(ctx, http.MethodPost, "/api/v1/admin/groups", nil, apitype.NewGroup{Name: name}, nil)
}

// AdminRemoveGroup deletes a group; its shares end.
func (c *Client) AdminRemoveGroup(ctx context.Context, name string) error {
	return c.JSON(ctx, http.MethodDelete, "/api/v1/admin/groups/"+url.PathEscape(name), nil, nil, nil)
}

// AdminGroupMember adds (add) or removes a group member.
func (c *Client) AdminGroupMember(ctx context.Context, group, user string, add bool) error {
	m := http.MethodDelete
	if add {
		m = http.MethodPut
	}
	return c.JSON(ctx, m, "/api/v1/admin/groups/"+url.PathEscape(group)+"/members/"+url.PathEscape(user), nil, nil, nil)
}
