package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"netdisk/apitype"
)

// SearchOptions narrow a Search; the zero value is a substring search of
// the whole drive, a page of the server's default size.
type SearchOptions struct {
	Glob   bool   // '*' and '?' are wildcards over the whole name
	Under  string // a folder; "" is the whole drive
	Limit  int    // 0: the server's default (100); at most 1000
	Cursor string // the Next of the page before; "" is the first page
}

// Search returns a page of the user's files and folders whose names match
// pattern, newest first (GET /api/v1/search).
func (c *Client) Search(ctx context.Context, pattern string, o SearchOptions) (apitype.SearchResult, error) {
	v := url.Values{"q": {pattern}}
	if o.Glob {
		v.Set("glob", "1")
	}
	if o.Under != "" {
		v.Set("under", o.Under)
	}
	if o.Limit != 0 {
		v.Set("limit", strconv.Itoa(o.Limit))
	}
	if o.Cursor != "" {
		v.Set("cursor", o.Cursor)
	}
	var res apitype.SearchResult
	err := c.JSON(ctx, http.MethodGet, "/api/v1/search", v, nil, &res)
	return res, err
}
