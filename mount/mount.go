package mount

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// Mount mounts the filesystem at dir and returns the running server; call
// Unmount (or fusermount3 -u) to end it and Wait to wait for that.
func Mount(dir string, f *FS, fsName string) (*fuse.Server, error) {
	return mountRoot(dir, f, f.Root(), f.MountOptions(fsName))
}

func mountRoot(dir string, f *FS, root fs.InodeEmbedder, opts *fs.Options) (*fuse.Server, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	st, err := os.Stat(dir)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("mount point %s is not a directory", dir)
	}
	srv, err := fs.Mount(dir, root, opts)
	if err != nil {
		return nil, fmt.Errorf("mount %s: %w", dir, err)
	}
	raiseReadAhead(dir, f.o.Logger)
	return srv, nil
}

// Check verifies that the backend answers, so a wrong URL or password fails
// before anything is mounted.
func Check(ctx context.Context, b Backend) error {
	ctx, cancel := context.WithTimeout(ctx, 15e9)
	defer cancel()
	e, err := b.Stat(ctx, "/")
	if err != nil {
		return err
	}
	if !e.IsDir {
		return fmt.Errorf("the server's root is not a directory")
	}
	return nil
}
