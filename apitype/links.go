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

// The link-scoped endpoints under /s/TOKEN/api/ (docs/API.md "Uploads
// through a link"): whoever holds an upload-only or read-write link adds
// files to its folder; a read-write link also renames and deletes. Paths
// are relative to the linked folder ("" or "/" is the folder itself).

// LinkInit is the body of POST /s/TOKEN/api/init; it is answered with a
// Session. A file never replaces another: a taken name is given a free
// one ("name (2).ext") that is not told.
type LinkInit struct {
	Name string `json:"name"` // one name, no "/"
	Size int64  `json:"size"`
	Dir  string `json:"dir,omitempty"` // read-write links: the folder below the link's
}

// LinkMerge is the body of POST /s/TOKEN/api/merge.
type LinkMerge struct {
	UploadID   string `json:"uploadId"`
	FileHash   string `json:"fileHash"`
	FileSHA256 string `json:"fileSha256,omitempty"`
}

// LinkUploaded answers a link's merge: the size and hash committed, and
// nothing of where (the folder's names are not the uploader's to see).
type LinkUploaded struct {
	Size     int64  `json:"size"`
	FileHash string `json:"fileHash"`
}

// LinkRename is the body of POST /s/TOKEN/api/rename (read-write links):
// Path gets the name Name in the same folder.
type LinkRename struct {
	Path string `json:"path"`
	Name string `json:"name"`
}

// LinkDelete is the body of POST /s/TOKEN/api/delete (read-write links):
// Path goes to the owner's trash.
type LinkDelete struct {
	Path string `json:"path"`
}
