package apitype

import "time"

// File operations (/api/v1/fs/…) and the user's quota.

// Node is a file, directory or symbolic link. Mode is the permission bits
// (0644 and 0755 by default, 0777 for a link); MTime is UTC; FileHash is ""
// for directories and links. Type is "file", "dir" or "symlink"; a link's
// Target is its target, an opaque string the server never follows, and its
// Size the target's length.
type Node struct {
	Path     string `json:"path"`
	Name     string `json:"name"`
	IsDir    bool   `json:"isDir"`
	Size     int64  `json:"size"`
	Mode     uint32 `json:"mode"`
	MTime    Time   `json:"mtime"`
	FileHash string `json:"fileHash"`
	// ID is the node's stable id: the fileId of the Nextcloud preview
	// shape (/index.php/core/preview?fileId=).
	ID     int64  `json:"id,omitempty"`
	Type   string `json:"type"`
	Target string `json:"target,omitempty"`
}

// Node types (Node.Type).
const (
	TypeFile    = "file"
	TypeDir     = "dir"
	TypeSymlink = "symlink"
)

// IsSymlink reports whether the node is a symbolic link.
func (n Node) IsSymlink() bool { return n.Type == TypeSymlink }

// SymlinkRequest is the body of POST /api/v1/fs/symlink: a link at Path
// holding Target (1 to 4,096 bytes, stored as given).
type SymlinkRequest struct {
	Path   string `json:"path"`
	Target string `json:"target"`
}

// Listing answers GET /api/v1/fs/list: the entries by name. Asked with a
// limit or a cursor it is one page of them, and Next, when not "", is the
// cursor of the page that follows (an opaque string; absent on the last).
type Listing struct {
	Path    string `json:"path"`
	Entries []Node `json:"entries"`
	Next    string `json:"next,omitempty"`
}

// List pages: the entries a page holds when the call gives a cursor and no
// limit, and the most one page holds (a larger limit is this one).
const (
	ListPageDefault = 1000
	ListPageMax     = 5000
)

// MkdirRequest is the body of POST /api/v1/fs/mkdir. With Parents missing
// parents are created and an existing directory is success (mkdir -p);
// Mode, when given, is stored on the directory created.
type MkdirRequest struct {
	Path    string  `json:"path"`
	Parents bool    `json:"parents,omitempty"`
	Mode    *uint32 `json:"mode,omitempty"`
}

// MoveRequest is the body of POST /api/v1/fs/move and /api/v1/fs/copy;
// Recursive is copy's only (default true).
type MoveRequest struct {
	From      string `json:"from"`
	To        string `json:"to"`
	Overwrite bool   `json:"overwrite"`
	Recursive *bool  `json:"recursive,omitempty"`
}

// SetAttrRequest is the body of POST /api/v1/fs/setattr: at least one of
// MTime and Mode (permission bits, ≤ 0o7777; 0 is a real 000).
type SetAttrRequest struct {
	Path  string     `json:"path"`
	MTime *time.Time `json:"mtime,omitempty"`
	Mode  *uint32    `json:"mode,omitempty"`
}

// Chunk is one chunk of a file as GET /api/v1/fs/chunks lists it. SHA256 is
// the chunk's identity; MD5 is not one (two different chunks may share it).
type Chunk struct {
	Index  int64  `json:"index"`
	Offset int64  `json:"offset"`
	MD5    string `json:"md5"`
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
}

// ChunkList answers GET /api/v1/fs/chunks: the current version's identity
// and its chunks in order.
type ChunkList struct {
	Path      string  `json:"path"`
	Size      int64   `json:"size"`
	FileHash  string  `json:"fileHash"`
	ModTime   Time    `json:"modTime"`
	ChunkSize int64   `json:"chunkSize"`
	Chunks    []Chunk `json:"chunks"`
}

// Quota answers GET /api/v1/quota: the user's figures as the quota ledger
// keeps them (seed 001). Total 0 means unlimited, and then Free is -1. Free
// is what a new upload may still declare: total - finished - metadata -
// uploading (uploading covers unfinished).
type Quota struct {
	Total      int64 `json:"total"`
	Finished   int64 `json:"finished"`   // sum of the user's file sizes
	Unfinished int64 `json:"unfinished"` // bytes received by open uploads
	Uploading  int64 `json:"uploading"`  // sizes declared by open uploads
	Free       int64 `json:"free"`
	Metadata   int64 `json:"metadata"` // what the user's files, folders and properties cost as entries (docs/API.md)
}

// Version is an earlier content of a file (GET /api/v1/versions): ID names
// it for download, restore and delete; MTime is the content's modification
// time, Saved when newer content replaced it; Author the user who wrote it.
type Version struct {
	ID       int64  `json:"id"`
	Size     int64  `json:"size"`
	MTime    Time   `json:"mtime"`
	Saved    Time   `json:"saved"`
	FileHash string `json:"fileHash"`
	Author   string `json:"author"`
}

// VersionList answers GET /api/v1/versions: the file as it is now and its
// versions, newest first.
type VersionList struct {
	File     Node      `json:"file"`
	Versions []Version `json:"versions"`
}

// VersionRequest is the body of POST /api/v1/versions/restore.
type VersionRequest struct {
	Path    string `json:"path"`
	Version int64  `json:"version"`
}
