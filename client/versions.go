package client

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"netdisk/apitype"
)

// A file's versions (docs/API.md "Versions").

// Versions lists file p and its versions, newest first.
func (c *Client) Versions(ctx context.Context, p string) (apitype.VersionList, error) {
	var l apitype.VersionList
	err := c.JSON(ctx, http.MethodGet, "/api/v1/versions", url.Values{"path": {p}}, nil, &l)
	return l, err
}

// VersionContent opens version vid of file p for reading; the caller closes
// it.
func (c *Client) VersionContent(ctx context.Context, p string, vid int64) (io.ReadCloser, error) {
	req, err := c.NewRequest(ctx, http.MethodGet, "/api/v1/versions/content", versionQuery(p, vid), nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// RestoreVersion makes version vid the content of file p; the content it
// replaces becomes a version. It returns the file as it is then.
func (c *Client) RestoreVersion(ctx context.Context, p string, vid int64) (apitype.Node, error) {
	var n apitype.Node
	err := c.JSON(ctx, http.MethodPost, "/api/v1/versions/restore", nil, apitype.VersionRequest{Path: p, Version: vid}, &n)
	return n, err
}

// DeleteVersion removes version vid of file p.
func (c *Client) DeleteVersion(ctx context.Context, p string, vid int64) error {
	return c.JSON(ctx, http.MethodDelete, "/api/v1/versions", versionQuery(p, vid), nil, nil)
}

func versionQuery(p string, vid int64) url.Values {
	return url.Values{"path": {p}, "version": {strconv.FormatInt(vid, 10)}}
}
