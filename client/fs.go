package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"netdisk/apitype"
)

// File operations of docs/API.md (/api/v1/fs/…) and the user's quota: the
// only way the CLI and the mount reach them.

// List returns the entries of directory p, by name.
func (c *Client) List(ctx context.Context, p string) ([]apitype.Node, error) {
	var l apitype.Listing
	err := c.JSON(ctx, http.MethodGet, "/api/v1/fs/list", url.Values{"path": {p}}, nil, &l)
	return l.Entries, err
}

// Stat describes p.
func (c *Client) Stat(ctx context.Context, p string) (apitype.Node, error) {
	var n apitype.Node
	err := c.JSON(ctx, http.MethodGet, "/api/v1/fs/stat", url.Values{"path": {p}}, nil, &n)
	return n, err
}

// Mkdir creates directory p; with parents, missing parents are created and
// an existing directory is not an error (mkdir -p).
func (c *Client) Mkdir(ctx context.Context, p string, parents bool) (apitype.Node, error) {
	var n apitype.Node
	err := c.JSON(ctx, http.MethodPost, "/api/v1/fs/mkdir", nil, apitype.MkdirRequest{Path: p, Parents: parents}, &n)
	return n, err
}

// MkdirMode creates directory p with permission bits mode (≤ 0o7777); its
// parent must exist.
func (c *Client) MkdirMode(ctx context.Context, p string, mode uint32) (apitype.Node, error) {
	var n apitype.Node
	err := c.JSON(ctx, http.MethodPost, "/api/v1/fs/mkdir", nil, apitype.MkdirRequest{Path: p, Mode: &mode}, &n)
	return n, err
}

// Symlink creates a symbolic link at p holding target.
func (c *Client) Symlink(ctx context.Context, p, target string) (apitype.Node, error) {
	var n apitype.Node
	err := c.JSON(ctx, http.MethodPost, "/api/v1/fs/symlink", nil, apitype.SymlinkRequest{Path: p, Target: target}, &n)
	return n, err
}

// Remove deletes p; a non-empty directory needs recursive.
func (c *Client) Remove(ctx context.Context, p string, recursive bool) error {
	return c.JSON(ctx, http.MethodDelete, "/api/v1/fs", url.Values{"path": {p}, "recursive": {strconv.FormatBool(recursive)}}, nil, nil)
}

// Move renames from to to; overwrite replaces an existing destination.
func (c *Client) Move(ctx context.Context, from, to string, overwrite bool) (apitype.Node, error) {
	var n apitype.Node
	err := c.JSON(ctx, http.MethodPost, "/api/v1/fs/move", nil, apitype.MoveRequest{From: from, To: to, Overwrite: overwrite}, &n)
	return n, err
}

// SetAttr sets p's modification time and/or permission bits (nil: left
// alone; at least one must be given) and returns the node as it is then.
func (c *Client) SetAttr(ctx context.Context, p string, mtime *time.Time, mode *uint32) (apitype.Node, error) {
	req := apitype.SetAttrRequest{Path: p, Mode: mode}
	if mtime != nil {
		t := mtime.UTC()
		req.MTime = &t
	}
	var n apitype.Node
	err := c.JSON(ctx, http.MethodPost, "/api/v1/fs/setattr", nil, req, &n)
	return n, err
}

// Quota fetches GET /api/v1/quota: the user's own usage (seed 001's figures).
func (c *Client) Quota(ctx context.Context) (apitype.Quota, error) {
	var q apitype.Quota
	err := c.JSON(ctx, http.MethodGet, "/api/v1/quota", nil, nil, &q)
	return q, err
}

// Chunks lists the chunks of file p's current version.
func (c *Client) Chunks(ctx context.Context, p string) (apitype.ChunkList, error) {
	var cl apitype.ChunkList
	err := c.JSON(ctx, http.MethodGet, "/api/v1/fs/chunks", url.Values{"path": {p}}, nil, &cl)
	return cl, err
}
