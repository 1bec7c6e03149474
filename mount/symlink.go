package mount

// A symbolic link of the mount (symlinkNode) and its creation. The drive
// stores a link's target as given and never follows it; the kernel resolves
// it here, as on a local filesystem, so a link to /etc/passwd reads the
// client's /etc/passwd, never the server's. Creating a link needs the
// server (with it out of reach, symlink fails with EHOSTDOWN like mkdir,
// write-back or not); reading one answers from the entry last seen.

import (
	"context"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

type symlinkNode struct {
	fs.Inode
	fsys *FS

	mu      sync.Mutex
	entry   Entry
	changed time.Time // ctime: last change seen here
}

var (
	_ fs.NodeReadlinker = (*symlinkNode)(nil)
	_ fs.NodeGetattrer  = (*symlinkNode)(nil)
	_ fs.NodeSetattrer  = (*symlinkNode)(nil)
)

func (l *symlinkNode) target() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.entry.Target
}

// refresh takes the server's entry of the same link.
func (l *symlinkNode) refresh(e Entry) {
	l.mu.Lock()
	l.entry = e
	l.mu.Unlock()
}

func (l *symlinkNode) getattr(out *fuse.Attr) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.fsys.fillAttr(l.entry, out)
	setCtime(out, l.changed)
}

// Readlink answers from the entry: a link's target never changes (another
// target is another link, and another inode, see dirNode.childInode).
func (l *symlinkNode) Readlink(ctx context.Context) ([]byte, syscall.Errno) {
	return []byte(l.target()), 0
}

// Getattr answers from the entry, which the folder's lookups and listings
// keep fresh.
func (l *symlinkNode) Getattr(ctx context.Context, _ fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	l.getattr(&out.Attr)
	return 0
}

// Setattr stores the times of the link itself (lutimes, touch -h, tar and
// rsync -a restoring a link's mtime). A mode is not stored: Linux refuses
// to change a link's bits before asking the filesystem, and the owner is
// accepted as a no-op, as for files.
func (l *symlinkNode) Setattr(ctx context.Context, _ fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if t, ok := in.GetMTime(); ok {
		ctx, cancel := l.fsys.opCtx(ctx)
		defer cancel()
		e, err := l.fsys.o.Backend.SetAttr(ctx, nodePath(&l.Inode), Attrs{ModTime: &t})
		if err != nil {
			return Errno(err)
		}
		l.mu.Lock()
		e.Name = l.entry.Name
		l.entry = e
		l.changed = l.fsys.o.Now()
		l.mu.Unlock()
	}
	l.getattr(&out.Attr)
	return 0
}

// Symlink creates the link name → target on the server at once (even with
// write-back: a link has no content to defer).
func (d *dirNode) Symlink(ctx context.Context, target, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if errno := d.fsys.checkName(d.path(), name); errno != 0 {
		return nil, errno
	}
	if len(target) > maxTargetLen {
		return nil, syscall.ENAMETOOLONG
	}
	if n := d.localChild(name); n != nil && !n.isDeleted() {
		return nil, syscall.EEXIST // a file created here, not uploaded yet
	}
	ctx, cancel := d.fsys.opCtx(ctx)
	defer cancel()
	e, err := d.fsys.o.Backend.Symlink(ctx, joinPath(d.path(), name), target)
	if err != nil {
		return nil, Errno(err)
	}
	e.Name = name
	d.noteChild(name, &e)
	d.touch()
	n := &symlinkNode{fsys: d.fsys, entry: e}
	n.getattr(&out.Attr)
	return d.NewInode(ctx, n, fs.StableAttr{Mode: syscall.S_IFLNK}), 0
}

// maxTargetLen is the longest target the drive keeps (meta.MaxSymlinkTarget;
// the kernel itself passes at most PATH_MAX-1 bytes).
const maxTargetLen = 4096
