package client

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"netdisk/apitype"
)

// Links lists the user's public links, oldest first.
func (c *Client) Links(ctx context.Context) ([]apitype.Link, error) {
	var out apitype.LinkList
	err := c.JSON(ctx, http.MethodGet, "/api/v1/links", nil, nil, &out)
	return out.Links, err
}

// AddLink makes a public link; its Token is in the answer only, and its
// URL is made absolute on the client's server.
func (c *Client) AddLink(ctx context.Context, l apitype.NewLink) (apitype.Link, error) {
	var out apitype.Link
	err := c.JSON(ctx, http.MethodPost, "/api/v1/links", nil, l, &out)
	if err == nil && strings.HasPrefix(out.URL, "/") {
		out.URL = strings.TrimRight(c.Server, "/") + out.URL
	}
	return out, err
}

// RemoveLink revokes the link id.
func (c *Client) RemoveLink(ctx context.Context, id int64) error {
	return c.JSON(ctx, http.MethodDelete, "/api/v1/links/"+strconv.FormatInt(id, 10), nil, nil, nil)
}
