package mount

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sync/singleflight"
)

// Options configure the filesystem.
type Options struct {
	Backend  Backend
	Cache    *ChunkCache
	StageDir string        // where written files are staged until uploaded
	TTL      time.Duration // entry/attribute lifetime; 0 means 1 s
	// OpTimeout bounds each metadata call and chunk fetch, so an unreachable
	// server yields EIO instead of a hang; 0 means 30 s. Uploads get
	// UploadTimeout (0 means 1 h).
	OpTimeout, UploadTimeout time.Duration
	Prefetch                 int // chunks fetched ahead of sequential reads; 0 means 4, <0 none
	Logger                   *slog.Logger
	Now                      func() time.Time
	UID, GID                 uint32 // owner shown for every node
	// ChunkLocks, when set, coordinates chunk fetches with the other mounts
	// sharing the cache folder (sharedfetch.go): each chunk is fetched once.
	ChunkLocks ChunkLocker
	// WriteBack makes close return once the data is staged locally and
	// uploads it in the background (writeback.go); fsync still waits for
	// the server. WriteBackFiles bounds the closed files waiting (0 means
	// 4096): close waits beyond it.
	WriteBack      bool
	WriteBackFiles int
}

// FS is the filesystem; Root returns its root node.
type FS struct {
	o        Options
	flights  singleflight.Group
	prefetch chan struct{} // bounds background fetches
	wb       *writeBack    // nil without Options.WriteBack
	bg       background    // fetches and releases no request waits for
	link     *link         // Options.Backend as given, behind the reachability check

	quotaMu   sync.Mutex
	lastQuota *Quota // what df showed last: its answer while the server is lost
}

// background owns the goroutines the filesystem starts beyond a request
// (prefetches, the shared fetch a reader may leave, releasing sent-ahead
// chunks): Close cancels ctx and waits for every one, and none starts
// after it.
type background struct {
	ctx  context.Context
	stop context.CancelFunc

	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
}

// add counts one more goroutine; false once closed (then do not start it).
func (b *background) add() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return false
	}
	b.wg.Add(1)
	return true
}

func (b *background) close() {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	b.stop()
	b.wg.Wait()
}

// errClosed answers a fetch asked once the filesystem is closed.
var errClosed = errors.New("mount: filesystem closed")

// New checks options and returns the filesystem.
func New(o Options) (*FS, error) {
	if o.TTL <= 0 {
		o.TTL = time.Second
	}
	if o.OpTimeout <= 0 {
		o.OpTimeout = 30 * time.Second
	}
	if o.UploadTimeout <= 0 {
		o.UploadTimeout = time.Hour
	}
	if o.Prefetch == 0 {
		o.Prefetch = 4
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if err := os.MkdirAll(o.StageDir, 0o700); err != nil {
		return nil, err
	}
	f := &FS{prefetch: make(chan struct{}, max(o.Prefetch, 1))}
	f.bg.ctx, f.bg.stop = context.WithCancel(context.Background())
	f.link = &link{inner: o.Backend, now: o.Now, log: o.Logger, bg: &f.bg, onUp: f.backOnline}
	o.Backend = f.link
	f.o = o
	if o.WriteBack {
		f.wb = newWriteBack(f, o.WriteBackFiles)
	}
	return f, nil
}

// backOnline runs when the server answers again after it was lost: what
// write-back kept for it goes up now.
func (f *FS) backOnline() {
	if f.wb != nil {
		f.wb.requeueWaiting()
	}
}

// Sync waits until every file closed so far has been uploaded (or its
// upload has failed and left it staged); without write-back there is never
// anything to wait for.
func (f *FS) Sync(ctx context.Context) error {
	if f.wb == nil {
		return nil
	}
	return f.wb.sync(ctx)
}

// Close uploads what write-back still holds and stops its workers, then
// cancels the background fetches and waits for them, and for the chunk
// cache's writes they started; call it once the filesystem is unmounted.
func (f *FS) Close() {
	if f.wb != nil {
		f.wb.close()
	}
	f.bg.close()
	if f.o.Cache != nil {
		f.o.Cache.Wait()
	}
}

// Root is the root directory node.
func (f *FS) Root() fs.InodeEmbedder { return &dirNode{fsys: f} }

// MountOptions are the go-fuse options this filesystem expects.
func (f *FS) MountOptions(fsName string) *fs.Options {
	ttl := f.o.TTL
	return &fs.Options{
		EntryTimeout:    &ttl,
		AttrTimeout:     &ttl,
		NegativeTimeout: &ttl,
		UID:             f.o.UID,
		GID:             f.o.GID,
		// Our attributes always carry the bits: a chmod 000 must show as
		// 000, not be replaced with go-fuse's default.
		NullPermissions: true,
		MountOptions: fuse.MountOptions{
			FsName:       fsName,
			Name:         "netdisk",
			MaxReadAhead: readAhead,
			MaxWrite:     readAhead,
			// Our reads answer bytes in memory, never a file descriptor
			// to splice from, yet go-fuse tries a pipe for every answer
			// first (and fails on a 1 MiB one: more than a pipe holds).
			DisableSplice:            true,
			DisableXAttrs:            true,
			ExplicitDataCacheControl: false,
			// Mode bits are stored numbers from the server: a setuid bit
			// must never make the kernel run a file as its owner.
			Options: []string{"nosuid", "nodev"},
		},
	}
}

// opCtx bounds one server call by OpTimeout, and only by it: go-fuse
// cancels a request's context when the kernel interrupts it, which it does
// for every signal the caller gets (SIGALRM of a progress display, Go's
// preemption SIGURG), and such a process retries nothing; it expects the
// call to complete. A fatal signal does not wait for our answer anyway.
func (f *FS) opCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), f.o.OpTimeout)
}

// nodePath is the node's absolute path in the drive.
func nodePath(n *fs.Inode) string { return "/" + n.Path(n.Root()) }

func joinPath(dir, name string) string {
	if dir == "/" {
		return "/" + name
	}
	return dir + "/" + name
}

// Permission bits of nodes whose bits are not known (defaultFileMode is also
// what the server shows for a file that has none stored).
const (
	defaultFileMode = 0o644
	defaultDirMode  = 0o755
)

func (f *FS) fillAttr(e Entry, out *fuse.Attr) {
	mode := e.Mode & 0o7777
	valid := e.Mode&ModeValid != 0
	if e.IsDir {
		if !valid {
			mode = defaultDirMode
		}
		out.Mode = syscall.S_IFDIR | mode
		out.Nlink = 2
		out.Size = 4096
	} else if e.Target != "" {
		// A link's own bits mean nothing on Linux: lrwxrwxrwx, and its
		// size is its target's length, as lstat shows on any filesystem.
		out.Mode = syscall.S_IFLNK | 0o777
		out.Nlink = 1
		out.Size = uint64(len(e.Target))
	} else {
		if !valid {
			mode = defaultFileMode
		}
		out.Mode = syscall.S_IFREG | mode
		out.Nlink = 1
		out.Size = uint64(e.Size)
	}
	out.Blksize = 1 << 16
	out.Blocks = (out.Size + 511) / 512
	// The drive keeps one time per node: atime shows the mtime (as with
	// noatime), ctime the mtime unless a later change was seen here.
	out.SetTimes(&e.ModTime, &e.ModTime, &e.ModTime)
	out.Uid, out.Gid = f.o.UID, f.o.GID
}

// setCtime shows changed as the ctime when it is later than the mtime: a
// chmod or rename changes the ctime only, and the server keeps no ctime.
func setCtime(out *fuse.Attr, changed time.Time) {
	if changed.After(out.ModTime()) {
		out.Ctime, out.Ctimensec = uint64(changed.Unix()), uint32(changed.Nanosecond())
	}
}
