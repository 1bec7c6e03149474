package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"netdisk/apitype"
)

// The admin calls of docs/admin.md; their bodies are apitype's.

func userPath(name string, sub string) string {
	return "/api/v1/admin/users/" + url.PathEscape(name) + sub
}

// AdminUsers lists every user.
func (c *Client) AdminUsers(ctx context.Context) ([]apitype.AdminUser, error) {
	var out apitype.UserList
	err := c.JSON(ctx, http.MethodGet, "/api/v1/admin/users", nil, nil, &out)
	return out.Users, err
}

// AdminUser returns one user.
func (c *Client) AdminUser(ctx context.Context, name string) (apitype.AdminUser, error) {
	var u apitype.AdminUser
	err := c.JSON(ctx, http.MethodGet, userPath(name, ""), nil, nil, &u)
	return u, err
}

// AdminAddUser creates a user.
func (c *Client) AdminAddUser(ctx context.Context, nu apitype.NewUser) (apitype.AdminUser, error) {
	var u apitype.AdminUser
	err := c.JSON(ctx, http.MethodPost, "/api/v1/admin/users", nil, nu, &u)
	return u, err
}

// AdminDeleteUser removes a user and their files.
func (c *Client) AdminDeleteUser(ctx context.Context, name string) error {
	return c.JSON(ctx, http.MethodDelete, userPath(name, ""), nil, nil, nil)
}

// AdminSetPassword replaces a user's password.
func (c *Client) AdminSetPassword(ctx context.Context, name, password string) error {
	return c.JSON(ctx, http.MethodPut, userPath(name, "/password"), nil, apitype.PasswordRequest{Password: password}, nil)
}

// AdminSetQuota sets a user's total in bytes (0 = unlimited).
func (c *Client) AdminSetQuota(ctx context.Context, name string, quota int64) (apitype.AdminUser, error) {
	var u apitype.AdminUser
	err := c.JSON(ctx, http.MethodPut, userPath(name, "/quota"), nil, apitype.QuotaRequest{Quota: &quota}, &u)
	return u, err
}

// AdminStats fetches store-wide figures.
func (c *Client) AdminStats(ctx context.Context) (apitype.Stats, error) {
	var s apitype.Stats
	err := c.JSON(ctx, http.MethodGet, "/api/v1/admin/stats", nil, nil, &s)
	return s, err
}

// AdminGC collects unreferenced chunks now.
func (c *Client) AdminGC(ctx context.Context) (apitype.GCResult, error) {
	var r apitype.GCResult
	err := c.JSON(ctx, http.MethodPost, "/api/v1/admin/gc", nil, nil, &r)
	return r, err
}

// AdminFsck re-hashes every stored chunk on the server. With progress set it
// asks for the streamed form and calls progress as the server reports it.
// Problems found are in the result, not an error.
func (c *Client) AdminFsck(ctx context.Context, progress func(done, total int64)) (apitype.FsckResult, error) {
	var r apitype.FsckResult
	if progress == nil {
		err := c.JSON(ctx, http.MethodPost, "/api/v1/admin/fsck", nil, nil, &r)
		return r, err
	}
	req, err := c.NewRequest(ctx, http.MethodPost, "/api/v1/admin/fsck", nil, nil)
	if err != nil {
		return r, err
	}
	req.Header.Set("Accept", apitype.NDJSON)
	resp, err := c.Do(req)
	if err != nil {
		return r, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 64<<20) // the result line lists every problem
	for sc.Scan() {
		var ev apitype.FsckEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return r, fmt.Errorf("fsck: bad progress line: %w", err)
		}
		switch {
		case ev.Error != "":
			// In-band: the 200 was sent before the check failed.
			return r, &Error{Status: http.StatusInternalServerError, Message: ev.Error, Code: ev.Code}
		case ev.Result != nil:
			return *ev.Result, nil
		case ev.Progress != nil:
			progress(ev.Progress.Done, ev.Progress.Total)
		}
	}
	if err := sc.Err(); err != nil {
		return r, fmt.Errorf("fsck: connection lost: %w", err)
	}
	return r, errors.New("fsck: the server ended the answer without a result")
}

// AdminPurgeTrash deletes for good the items of user name's trash deleted
// longer than olderThan ago (0: all of them) and returns how many.
func (c *Client) AdminPurgeTrash(ctx context.Context, name string, olderThan time.Duration) (int64, error) {
	q := url.Values{}
	if olderThan > 0 {
		q.Set("olderThan", olderThan.String())
	}
	var out apitype.TrashEmptied
	err := c.JSON(ctx, http.MethodDelete, userPath(name, "/trash"), q, nil, &out)
	return out.Deleted, err
}
