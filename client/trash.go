package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"netdisk/apitype"
)

// The signed-in user's trash (docs/API.md "Trash").

// Trash returns a page of the trash, newest first: at most limit items (0:
// the server's default) deleted before item before (0: from the newest).
func (c *Client) Trash(ctx context.Context, before int64, limit int) (apitype.TrashList, error) {
	q := url.Values{}
	if before > 0 {
		q.Set("before", strconv.FormatInt(before, 10))
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var out apitype.TrashList
	err := c.JSON(ctx, http.MethodGet, "/api/v1/trash", q, nil, &out)
	return out, err
}

// RestoreTrash restores item id, or when id is 0 the newest item deleted at
// path, and says where it is now.
func (c *Client) RestoreTrash(ctx context.Context, id int64, path string) (apitype.TrashRestored, error) {
	var out apitype.TrashRestored
	err := c.JSON(ctx, http.MethodPost, "/api/v1/trash/restore", nil, apitype.TrashRestore{ID: id, Path: path}, &out)
	return out, err
}

// ExpungeTrash deletes item id for good.
func (c *Client) ExpungeTrash(ctx context.Context, id int64) error {
	return c.JSON(ctx, http.MethodDelete, "/api/v1/trash/"+strconv.FormatInt(id, 10), nil, nil, nil)
}

// EmptyTrash deletes every item of the trash for good and returns how many
// there were.
func (c *Client) EmptyTrash(ctx context.Context) (int64, error) {
	var out apitype.TrashEmptied
	err := c.JSON(ctx, http.MethodDelete, "/api/v1/trash", nil, nil, &out)
	return out.Deleted, err
}
