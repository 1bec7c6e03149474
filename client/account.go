package client

import (
	"context"
	"net/http"
	"net/url"

	"netdisk/apitype"
)

// The signed-in user's own account (docs/API.md "Account").

// ChangePassword replaces the user's password; old is the current one. The
// client keeps using the password it was made with: make a new one.
func (c *Client) ChangePassword(ctx context.Context, old, new string) error {
	return c.JSON(ctx, http.MethodPut, "/api/v1/account/password", nil, apitype.ChangePassword{Old: old, New: new}, nil)
}

// Tokens lists the user's app tokens.
func (c *Client) Tokens(ctx context.Context) ([]apitype.Token, error) {
	var out apitype.TokenList
	err := c.JSON(ctx, http.MethodGet, "/api/v1/account/tokens", nil, nil, &out)
	return out.Tokens, err
}

// AddToken makes an app token called name; its Secret is in the answer
// only.
func (c *Client) AddToken(ctx context.Context, name string) (apitype.Token, error) {
	var t apitype.Token
	err := c.JSON(ctx, http.MethodPost, "/api/v1/account/tokens", nil, apitype.NewToken{Name: name}, &t)
	return t, err
}

// RemoveToken revokes the app token called name.
func (c *Client) RemoveToken(ctx context.Context, name string) error {
	return c.JSON(ctx, http.MethodDelete, "/api/v1/account/tokens/"+url.PathEscape(name), nil, nil, nil)
}
