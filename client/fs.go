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

// List returns the entries of directory p, by name, read a page at a time.
// A caller that can use the entries as they come (print them, fill a
// table) uses ListPages and never holds the folder.
func (c *Client) List(ctx context.Context, p string) ([]apitype.Node, error) {
	var out []apitype.Node
	err := c.ListPages(ctx, p, 0, func(ns []apitype.Node) error {
		out = append(out, ns...)
		return nil
	})
	return out, err
}

// ListPage returns one page of directory p's entries, by name: the first
// for cursor "", else the one after the page whose Next was cursor. limit
// ≤ 0 is apitype.ListPageDefault; the server holds a page to
// apitype.ListPageMax.
func (c *Client) ListPage(ctx context.Context, p, cursor string, limit int) (apitype.Listing, error) {
	if limit <= 0 {
		limit = apitype.ListPageDefault
	}
	q := url.Values{"path": {p}, "limit": {strconv.Itoa(limit)}}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	var l apitype.Listing
	err := c.JSON(ctx, http.MethodGet, "/api/v1/fs/list", q, nil, &l)
	return l, err
}

// ListPages calls fn with each page of directory p's entries in order (limit
// as ListPage's) until the last page or fn's error, which it returns. An
// entry that exists throughout shows exactly once; one added or removed
// meanwhile at most once.
func (c *Client) ListPages(ctx context.Context, p string, limit int, fn func([]apitype.Node) error) error {
	cursor := ""
	for {
		l, err := c.ListPage(ctx, p, cursor, limit)
		if err != nil {
			return err
		}
		if err := fn(l.Entries); err != nil {
			return err
		}
		if l.Next == "" {
			return nil
		}
		cursor = l.Next
	}
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
