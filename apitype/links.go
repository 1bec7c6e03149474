package apitype

import "time"

// Public links (/api/v1/links, docs/API.md "Public links"): a URL that
// lets whoever holds it reach one file or folder without an account.

// Link permissions, as NewLink.Permission and Link.Permission name them.
const (
	LinkRead      = "read"       // list and download
	LinkUpload    = "upload"     // a file drop: add files, never list nor download
	LinkReadWrite = "read-write" // read, upload, rename and delete inside the folder
)

// NewLink is the body of POST /api/v1/links.
type NewLink struct {
	Path         string     `json:"path"`
	Password     string     `json:"password,omitempty"`
	Expires      *time.Time `json:"expires,omitempty"`    // null: never
	Permission   string     `json:"permission,omitempty"` // LinkRead when empty
	MaxDownloads int64      `json:"maxDownloads,omitempty"`
}

// Link is a public link as listed; Token and URL are set only in the
// answer that made it (the token is shown once and stored only hashed).
type Link struct {
	ID           int64      `json:"id"`
	Path         string     `json:"path"` // where the linked node is now
	Permission   string     `json:"permission"`
	Password     bool       `json:"password"`
	Expires      *time.Time `json:"expires"` // null: never
	MaxDownloads int64      `json:"maxDownloads"`
	Downloads    int64      `json:"downloads"`
	Created      time.Time  `json:"created"`
	LastUse      *time.Time `json:"lastUse"` // null: never used
	Token        string     `json:"token,omitempty"`
	URL          string     `json:"url,omitempty"` // the public page, as /s/TOKEN below the server's base
}

// LinkList answers GET /api/v1/links.
type LinkList struct {
	Links []Link `json:"links"`
}
