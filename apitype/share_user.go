package apitype

import "time"

// Shares between users (docs/API.md "Shares between users").

// UserShare is one of the signed-in user's files or folders shared with a
// user or a group.
type UserShare struct {
	ID      int64     `json:"id"`
	Path    string    `json:"path"` // in the owner's tree; "" while in the trash
	To      string    `json:"to"`   // the user's or the group's name
	Group   bool      `json:"group,omitempty"`
	Write   bool      `json:"write"`
	Created time.Time `json:"created"`
}

// SharedWithMe is another user's file or folder the signed-in user sees
// at Path of their own tree.
type SharedWithMe struct {
	Path  string `json:"path"`
	Owner string `json:"owner"`
	Write bool   `json:"write"`
	IsDir bool   `json:"isDir"`
	Group bool   `json:"group,omitempty"`
}

// UserShareList answers GET /api/v1/user-shares.
type UserShareList struct {
	Shares       []UserShare    `json:"shares"`
	SharedWithMe []SharedWithMe `json:"sharedWithMe"`
}

// NewUserShare asks to share Path with User or Group (one of them). The
// same share again only changes Write.
type NewUserShare struct {
	Path  string `json:"path"`
	User  string `json:"user,omitempty"`
	Group string `json:"group,omitempty"`
	Write bool   `json:"write"`
}

// UserShareWrite changes a share's permission.
type UserShareWrite struct {
	Write bool `json:"write"`
}

// LeaveShare asks to remove the recipient's entry at Path.
type LeaveShare struct {
	Path string `json:"path"`
}

// Group is an admin-kept set of users.
type Group struct {
	Name    string    `json:"name"`
	Members []string  `json:"members"`
	Created time.Time `json:"created"`
}

// NewGroup asks for a group.
type NewGroup struct {
	Name string `json:"name"`
}
