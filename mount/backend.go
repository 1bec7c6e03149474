// Package mount is netdisk's FUSE filesystem (go-fuse v2 fs API) over the HTTP
// API. It holds no business rules: reads fetch the chunks they touch into a
// content-addressed local cache, writes are staged in a local file and
// uploaded on close/fsync, and everything else is one call to a Backend.
// It is not a cache-coherent distributed filesystem: changes made elsewhere
// show within the configured TTL.
package mount

import (
	"context"
	"io"
	"time"

	"netdisk/chunker"
)

// Entry is a file, directory or symbolic link as the backend reports it.
type Entry struct {
	Name  string // last path element
	IsDir bool
	// Target is a symbolic link's target ("" for files and directories):
	// the server stores it and never follows it; the kernel does.
	Target   string
	Size     int64
	ModTime  time.Time
	Mode     uint32 // permission bits | ModeValid; without ModeValid the defaults 0644/0755 apply
	FileHash string // files only
}

// ModeValid marks Entry.Mode as carrying real permission bits (000
// included), as the server reports them.
const ModeValid uint32 = 1 << 31

// Attrs are the attributes SetAttr changes; nil fields are left alone.
type Attrs struct {
	Mode    *uint32 // permission bits, ≤ 0o7777
	ModTime *time.Time
}

// storedIn says e already holds every attribute a sets.
func (a Attrs) storedIn(e Entry) bool {
	return (a.Mode == nil || e.Mode&ModeValid != 0 && e.Mode&0o7777 == *a.Mode) &&
		(a.ModTime == nil || e.ModTime.Equal(*a.ModTime))
}

// ChunkRef is one chunk of a file version.
type ChunkRef struct {
	Offset int64
	Size   int64
	MD5    string
	SHA256 string // the chunk's identity; "" from a server too old to say
}

// ChunkList is a file version's identity and chunks, in order.
type ChunkList struct {
	FileHash string
	Size     int64
	ModTime  time.Time
	Chunks   []ChunkRef
}

// Quota is the user's space; Total 0 means unlimited. Used is what the user
// has (their files); Uploading is what open uploads hold against the quota
// besides (seed 001 counts them apart): df shows Used as used and leaves
// Uploading out of what is available.
type Quota struct {
	Total, Used, Uploading int64
}

// Backend is everything the mount needs from the server. Paths are absolute
// and cleaned ("/a/b"). Errors are translated to errnos by Errno: the
// server's answers come as *client.Error, whose code names the kind (not
// found, exists, quota…); transport failures as anything else.
type Backend interface {
	Stat(ctx context.Context, path string) (Entry, error)
	// ListPage returns up to limit entries of dir by name, after the page
	// whose next cursor is cursor ("" for the first), and the cursor of
	// the page after this one ("" on the last). A folder is read a page at
	// a time so the mount never holds it but in the listing it keeps.
	ListPage(ctx context.Context, dir, cursor string, limit int) (es []Entry, next string, err error)
	ChunkList(ctx context.Context, path string) (ChunkList, error)
	// ReadRange reads [off, off+len(dest)) of the version whose file hash is
	// fileHash; a different current version is ErrStale.
	ReadRange(ctx context.Context, path, fileHash string, off int64, dest []byte) error
	// Upload stores size bytes of r at path and returns once the server has
	// committed them. sums, when not nil, are the chunks' identities (MD5
	// and SHA-256) cut at ChunkSize, already known: r is then read only for
	// chunks to send.
	// The attributes a are stored in the same commit where the backend can
	// (small files); the Entry returned says what the server holds, and the
	// caller stores with SetAttr what it does not.
	Upload(ctx context.Context, r io.ReaderAt, size int64, sums []chunker.Sum, path string, a Attrs) (Entry, error)
	// ChunkSize is the server's chunk size; 0 means unknown, and then no
	// data is sent ahead.
	ChunkSize() int64
	// SendAhead stores one full chunk of a file still being written, so the
	// Upload at close finds it on the server; the answer is a handle for
	// Release, to be called once that upload is over.
	SendAhead(ctx context.Context, path string, data []byte, sum chunker.Sum) (string, error)
	Release(ctx context.Context, handles []string)
	// Mkdir creates a directory with permission bits mode (≤ 0o7777).
	Mkdir(ctx context.Context, path string, mode uint32) error
	// Symlink creates a symbolic link at path holding target and returns
	// it as stored (EEXIST when the name is taken). A link's target is
	// in its Entry: there is no separate readlink call.
	Symlink(ctx context.Context, path, target string) (Entry, error)
	// Remove deletes a file or an empty directory (ENOTEMPTY otherwise).
	Remove(ctx context.Context, path string) error
	Rename(ctx context.Context, src, dst string, overwrite bool) error
	// SetAttr stores the attributes given and returns the node as it is then.
	SetAttr(ctx context.Context, path string, a Attrs) (Entry, error)
	Quota(ctx context.Context) (Quota, error)
}
