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
)

// The admin calls of docs/admin.md. The types mirror the server's answers;
// they are declared here so the client does not link the server's packages.

// AdminUser is a user as admins see it.
type AdminUser struct {
	Name       string    `json:"name"`
	Admin      bool      `json:"admin"`
	Quota      int64     `json:"quota"` // bytes; 0 = unlimited
	Finished   int64     `json:"finished"`
	Unfinished int64     `json:"unfinished"`
	Uploading  int64     `json:"uploading"` // sizes declared by open uploads
	Created    time.Time `json:"created"`
}

// NewUser is what AdminAddUser sends.
type NewUser struct {
	Name     string `json:"name"`
	Password string `json:"password"`
	Admin    bool   `json:"admin"`
	Quota    int64  `json:"quota"` // bytes; 0 = unlimited
}

// Stats are store-wide figures.
type Stats struct {
	Users         int64   `json:"users"`
	Files         int64   `json:"files"`
	Dirs          int64   `json:"dirs"`
	LogicalBytes  int64   `json:"logicalBytes"`
	PhysicalBytes int64   `json:"physicalBytes"`
	Chunks        int64   `json:"chunks"`
	DedupRatio    float64 `json:"dedupRatio"`
}

// GCResult reports what a collection freed.
type GCResult struct {
	Chunks       int64 `json:"chunks"`
	Bytes        int64 `json:"bytes"`
	OrphanBlobs  int64 `json:"orphanBlobs"`
	SkippedInUse int64 `json:"skippedInUse"`
}

// FsckProblem is one chunk that is not as its record says.
type FsckProblem struct {
	SHA256  string `json:"sha256"`
	Problem string `json:"problem"` // "missing", "corrupt", "unreadable"
	Detail  string `json:"detail,omitempty"`
}

// FsckResult reports a full check.
type FsckResult struct {
	Checked  int64         `json:"checked"`
	Bytes    int64         `json:"bytes"`
	Problems []FsckProblem `json:"problems"`
}

func userPath(name string, sub string) string {
	return "/api/v1/admin/users/" + url.PathEscape(name) + sub
}

// AdminUsers lists every user.
func (c *Client) AdminUsers(ctx context.Context) ([]AdminUser, error) {
	var out struct {
		Users []AdminUser `json:"users"`
	}
	err := c.JSON(ctx, http.MethodGet, "/api/v1/admin/users", nil, nil, &out)
	return out.Users, err
}

// AdminUser returns one user.
func (c *Client) AdminUser(ctx context.Context, name string) (AdminUser, error) {
	var u AdminUser
	err := c.JSON(ctx, http.MethodGet, userPath(name, ""), nil, nil, &u)
	return u, err
}

// AdminAddUser creates a user.
func (c *Client) AdminAddUser(ctx context.Context, nu NewUser) (AdminUser, error) {
	var u AdminUser
	err := c.JSON(ctx, http.MethodPost, "/api/v1/admin/users", nil, nu, &u)
	return u, err
}

// AdminDeleteUser removes a user and their files.
func (c *Client) AdminDeleteUser(ctx context.Context, name string) error {
	return c.JSON(ctx, http.MethodDelete, userPath(name, ""), nil, nil, nil)
}

// AdminSetPassword replaces a user's password.
func (c *Client) AdminSetPassword(ctx context.Context, name, password string) error {
	return c.JSON(ctx, http.MethodPut, userPath(name, "/password"), nil, map[string]string{"password": password}, nil)
}

// AdminSetQuota sets a user's total in bytes (0 = unlimited).
func (c *Client) AdminSetQuota(ctx context.Context, name string, quota int64) (AdminUser, error) {
	var u AdminUser
	err := c.JSON(ctx, http.MethodPut, userPath(name, "/quota"), nil, map[string]int64{"quota": quota}, &u)
	return u, err
}

// AdminStats fetches store-wide figures.
func (c *Client) AdminStats(ctx context.Context) (Stats, error) {
	var s Stats
	err := c.JSON(ctx, http.MethodGet, "/api/v1/admin/stats", nil, nil, &s)
	return s, err
}

// AdminGC collects unreferenced chunks now.
func (c *Client) AdminGC(ctx context.Context) (GCResult, error) {
	var r GCResult
	err := c.JSON(ctx, http.MethodPost, "/api/v1/admin/gc", nil, nil, &r)
	return r, err
}

// AdminFsck re-hashes every stored chunk on the server. With progress set it
// asks for the streamed form and calls progress as the server reports it.
// Problems found are in the result, not an error.
func (c *Client) AdminFsck(ctx context.Context, progress func(done, total int64)) (FsckResult, error) {
	var r FsckResult
	if progress == nil {
		err := c.JSON(ctx, http.MethodPost, "/api/v1/admin/fsck", nil, nil, &r)
		return r, err
	}
	req, err := c.NewRequest(ctx, http.MethodPost, "/api/v1/admin/fsck", nil, nil)
	if err != nil {
		return r, err
	}
	req.Header.Set("Accept", "application/x-ndjson")
	resp, err := c.Do(req)
	if err != nil {
		return r, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 64<<20) // the result line lists every problem
	for sc.Scan() {
		var ev struct {
			Progress *struct{ Done, Total int64 } `json:"progress"`
			Result   *FsckResult                  `json:"result"`
			Error    string                       `json:"error"`
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return r, fmt.Errorf("fsck: bad progress line: %w", err)
		}
		switch {
		case ev.Error != "":
			return r, &Error{Status: http.StatusInternalServerError, Message: ev.Error}
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
