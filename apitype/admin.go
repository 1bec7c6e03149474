package apitype

import "time"

// The admin calls of docs/admin.md (/api/v1/admin/…).

// AdminUser is a user as admins see it: never the password hash.
type AdminUser struct {
	Name       string    `json:"name"`
	Admin      bool      `json:"admin"`
	Quota      int64     `json:"quota"`      // bytes; 0 = unlimited
	Finished   int64     `json:"finished"`   // bytes in the user's files
	Unfinished int64     `json:"unfinished"` // bytes held by open upload sessions
	Uploading  int64     `json:"uploading"`  // sizes declared by open uploads (quota ledger)
	Created    time.Time `json:"created"`
	Metadata   int64     `json:"metadata"` // what the user's entries and properties cost (docs/API.md)
	Trash      int64     `json:"trash"`    // bytes of the files in the user's trash (not in the quota)
	Versions   int64     `json:"versions"` // bytes of the user's file versions, each counted whole (not in the quota)
}

// UserList answers GET /api/v1/admin/users.
type UserList struct {
	Users []AdminUser `json:"users"`
}

// NewUser is the body of POST /api/v1/admin/users.
type NewUser struct {
	Name     string `json:"name"`
	Password string `json:"password"`
	Admin    bool   `json:"admin"`
	Quota    int64  `json:"quota"` // bytes; 0 = unlimited
}

// PasswordRequest is the body of PUT /api/v1/admin/users/{name}/password.
type PasswordRequest struct {
	Password string `json:"password"`
}

// QuotaRequest is the body of PUT /api/v1/admin/users/{name}/quota. A
// pointer, so a body without "quota" is refused instead of silently meaning
// unlimited.
type QuotaRequest struct {
	Quota *int64 `json:"quota"`
}

// Stats answers GET /api/v1/admin/stats.
type Stats struct {
	Users         int64   `json:"users"`
	Files         int64   `json:"files"`
	Dirs          int64   `json:"dirs"`
	LogicalBytes  int64   `json:"logicalBytes"`
	PhysicalBytes int64   `json:"physicalBytes"`
	Chunks        int64   `json:"chunks"`
	DedupRatio    float64 `json:"dedupRatio"` // logical / physical; 0 when nothing is stored
}

// GCResult answers POST /api/v1/admin/gc.
type GCResult struct {
	Chunks       int64 `json:"chunks"`       // chunk records and blobs removed
	Bytes        int64 `json:"bytes"`        // their size
	OrphanBlobs  int64 `json:"orphanBlobs"`  // blobs with no record (left by a crash before commit)
	SkippedInUse int64 `json:"skippedInUse"` // unreferenced but pinned by an upload or reader
}

// FsckProblem is one chunk that is not as its record says, or a broken
// reference of the trash or of a version ("trash", "history": no sha256).
type FsckProblem struct {
	SHA256  string `json:"sha256"`
	Problem string `json:"problem"` // "missing", "corrupt", "unreadable", "trash", "history"
	Detail  string `json:"detail,omitempty"`
}

// FsckResult answers POST /api/v1/admin/fsck: problems found are the
// answer, not an error.
type FsckResult struct {
	Checked  int64         `json:"checked"`
	Bytes    int64         `json:"bytes"`
	Problems []FsckProblem `json:"problems"`
}

// NDJSON is the media type of streamed fsck progress.
const NDJSON = "application/x-ndjson"

// FsckEvent is one line of a streamed fsck (Accept: application/x-ndjson):
// progress lines, then exactly one line with either Result or Error. The
// status (200) is sent first, so a failure arrives in-band, with its Code as
// in an error body.
type FsckEvent struct {
	Progress *FsckProgress `json:"progress,omitempty"`
	Result   *FsckResult   `json:"result,omitempty"`
	Error    string        `json:"error,omitempty"`
	Code     string        `json:"code,omitempty"`
}

// FsckProgress counts chunks checked so far.
type FsckProgress struct {
	Done  int64 `json:"done"`
	Total int64 `json:"total"`
}
