package mount

import (
	"context"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// Fetch exposes the shared chunk fetch to the tests of package mount_test.
func (f *FS) Fetch(ctx context.Context, p, fileHash string, c ChunkRef) ([]byte, error) {
	return f.fetch(ctx, p, fileHash, c)
}

// Abandon lets go of the folder's lock without cleaning up, as the death of
// its process does.
func (s *Staging) Abandon() { s.lock.Close() }

// MountKeepRoot is Mount that also returns the root folder's node.
func MountKeepRoot(dir string, f *FS, fsName string) (*fuse.Server, fs.InodeEmbedder, error) {
	root := f.Root()
	srv, err := mountRoot(dir, f, root, fsName)
	return srv, root, err
}

// ListDir lists the folder node n as a lookup or getattr of it does, which
// the kernel may run at any time beside a rename in that folder.
func ListDir(ctx context.Context, n fs.InodeEmbedder) error {
	d := n.(*dirNode)
	if _, errno := d.list(ctx, d.path()); errno != 0 {
		return errno
	}
	return nil
}

// SetListPage makes folder listings ask for n entries a page until restore.
func SetListPage(n int) (restore func()) {
	old := listPage
	listPage = n
	return func() { listPage = old }
}
