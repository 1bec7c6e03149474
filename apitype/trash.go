package apitype

import "time"

// The signed-in user's trash (/api/v1/trash, docs/API.md "Trash"): what
// they deleted, newest first, until it is restored, deleted for good or
// expunged by the retention.

// TrashItem is one deleted file or folder (a folder with all it held).
type TrashItem struct {
	ID        int64     `json:"id"`
	Path      string    `json:"path"` // where it was
	Name      string    `json:"name"`
	IsDir     bool      `json:"isDir"`
	Size      int64     `json:"size"` // bytes of its files
	Deleted   time.Time `json:"deleted"`
	DeletedBy string    `json:"deletedBy"` // the account that deleted it
}

// TrashList answers GET /api/v1/trash. Next, when not 0, is the before of
// the next page.
type TrashList struct {
	Items []TrashItem `json:"items"`
	Next  int64       `json:"next,omitempty"`
}

// TrashRestore is the body of POST /api/v1/trash/restore: an item by id, or
// the newest item deleted at path.
type TrashRestore struct {
	ID   int64  `json:"id,omitempty"`
	Path string `json:"path,omitempty"`
}

// TrashRestored answers a restore: Path is where the item is now; Renamed
// says it is not its original path (that name was taken).
type TrashRestored struct {
	ID       int64  `json:"id"`
	Path     string `json:"path"`
	Original string `json:"original"`
	Renamed  bool   `json:"renamed"`
}

// TrashEmptied answers DELETE /api/v1/trash.
type TrashEmptied struct {
	Deleted int64 `json:"deleted"` // items deleted for good
}
