package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// File operations of docs/API.md (/api/v1/fs/…) and the user's quota.

// Node is a file or directory as the API describes it.
type Node struct {
	Path     string    `json:"path"`
	Name     string    `json:"name"`
	IsDir    bool      `json:"isDir"`
	Size     int64     `json:"size"`
	Mode     uint32    `json:"mode"`
	MTime    time.Time `json:"mtime"`
	FileHash string    `json:"fileHash"`
}

// List returns the entries of directory p, by name.
func (c *Client) List(ctx context.Context, p string) ([]Node, error) {
	var r struct {
		Entries []Node `json:"entries"`
	}
	err := c.JSON(ctx, http.MethodGet, "/api/v1/fs/list", url.Values{"path": {p}}, nil, &r)
	return r.Entries, err
}

// Stat describes p.
func (c *Client) Stat(ctx context.Context, p string) (Node, error) {
	var n Node
	err := c.JSON(ctx, http.MethodGet, "/api/v1/fs/stat", url.Values{"path": {p}}, nil, &n)
	return n, err
}

// Mkdir creates directory p; with parents, missing parents are created and
// an existing directory is not an error (mkdir -p).
func (c *Client) Mkdir(ctx context.Context, p string, parents bool) (Node, error) {
	var n Node
	err := c.JSON(ctx, http.MethodPost, "/api/v1/fs/mkdir", nil, map[string]any{"path": p, "parents": parents}, &n)
	return n, err
}

// Remove deletes p; a non-empty directory needs recursive.
func (c *Client) Remove(ctx context.Context, p string, recursive bool) error {
	return c.JSON(ctx, http.MethodDelete, "/api/v1/fs", url.Values{"path": {p}, "recursive": {strconv.FormatBool(recursive)}}, nil, nil)
}

// Move renames from to to; overwrite replaces an existing destination.
func (c *Client) Move(ctx context.Context, from, to string, overwrite bool) (Node, error) {
	var n Node
	err := c.JSON(ctx, http.MethodPost, "/api/v1/fs/move", nil, map[string]any{"from": from, "to": to, "overwrite": overwrite}, &n)
	return n, err
}

// Quota is the user's own usage (seed 001's figures).
type Quota struct {
	Total      int64 `json:"total"`      // bytes; 0 = unlimited
	Finished   int64 `json:"finished"`   // bytes in the user's files
	Unfinished int64 `json:"unfinished"` // bytes received by open uploads
	Uploading  int64 `json:"uploading"`  // sizes declared by open uploads
	Free       int64 `json:"free"`       // what a new upload may declare; -1 = unlimited
}

// Quota fetches GET /api/v1/quota.
func (c *Client) Quota(ctx context.Context) (Quota, error) {
	var q Quota
	err := c.JSON(ctx, http.MethodGet, "/api/v1/quota", nil, nil, &q)
	return q, err
}

// Chunk is one chunk of a file as GET /api/v1/fs/chunks lists it.
type Chunk struct {
	Index  int64  `json:"index"`
	Offset int64  `json:"offset"`
	Size   int64  `json:"size"`
	MD5    string `json:"md5"`
	// SHA256 identifies the chunk's content (the MD5 does not: two chunks
	// may share one). An older server leaves it empty.
	SHA256 string `json:"sha256"`
}

// ChunkList is a file version's identity and chunks, in order.
type ChunkList struct {
	Path      string    `json:"path"`
	Size      int64     `json:"size"`
	FileHash  string    `json:"fileHash"`
	ModTime   time.Time `json:"modTime"`
	ChunkSize int64     `json:"chunkSize"`
	Chunks    []Chunk   `json:"chunks"`
}

// Chunks lists the chunks of file p's current version.
func (c *Client) Chunks(ctx context.Context, p string) (ChunkList, error) {
	var cl ChunkList
	err := c.JSON(ctx, http.MethodGet, "/api/v1/fs/chunks", url.Values{"path": {p}}, nil, &cl)
	return cl, err
}
