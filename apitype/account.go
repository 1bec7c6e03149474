package apitype

import "time"

// The signed-in user's own account (/api/v1/account/…, docs/API.md
// "Account"): their password and their app tokens.

// ChangePassword is the body of PUT /api/v1/account/password.
type ChangePassword struct {
	Old string `json:"old"` // the current password
	New string `json:"new"`
}

// NewToken is the body of POST /api/v1/account/tokens.
type NewToken struct {
	Name string `json:"name"`
}

// Token is an app token as listed; Secret is set only in the answer that
// made it (it is shown once and kept nowhere).
type Token struct {
	Name    string     `json:"name"`
	Created time.Time  `json:"created"`
	LastUse *time.Time `json:"lastUse"` // null: never used
	Secret  string     `json:"token,omitempty"`
}

// TokenList answers GET /api/v1/account/tokens.
type TokenList struct {
	Tokens []Token `json:"tokens"`
}
