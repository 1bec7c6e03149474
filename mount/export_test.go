package mount

import (
	"context"
	"io"
	"log"

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
	srv, err := mountRoot(dir, f, root, f.MountOptions(fsName))
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

// MountLogged is Mount with go-fuse's log of every request written to w.
func MountLogged(dir string, f *FS, fsName string, w io.Writer) (*fuse.Server, error) {
	o := f.MountOptions(fsName)
	o.Debug = true
	o.Logger = log.New(w, "", 0)
	o.MountOptions.Logger = o.Logger
	return mountRoot(dir, f, f.Root(), o)
}
