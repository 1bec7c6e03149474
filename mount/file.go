package mount

import (
	"context"
	"errors"
	"io"
	"os"
	"sort"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// fileNode is a regular file. While it is open for writing (or holds data
// whose upload failed) its content lives in a local staged file, which then
// answers reads and attributes; otherwise reads fetch chunks.
type fileNode struct {
	fs.Inode
	fsys *FS

	mu      sync.Mutex
	entry   Entry
	attrAt  time.Time
	stage   *os.File   // nil when not staged
	dirty   bool       // stage holds data the server does not have
	ahead   *ahead     // follows in-order writes to the stage; may be nil
	mtime   *time.Time // set while dirty: stored after the upload
	mode    *uint32    // likewise (chmod of a file being written)
	opens   int
	deleted bool
}

var (
	_ fs.NodeGetattrer = (*fileNode)(nil)
	_ fs.NodeSetattrer = (*fileNode)(nil)
	_ fs.NodeOpener    = (*fileNode)(nil)
	_ fs.NodeReader    = (*fileNode)(nil)
	_ fs.NodeWriter    = (*fileNode)(nil)
	_ fs.NodeFlusher   = (*fileNode)(nil)
	_ fs.NodeFsyncer   = (*fileNode)(nil)
	_ fs.NodeReleaser  = (*fileNode)(nil)
)

func (n *fileNode) path() string { return nodePath(&n.Inode) }

// refresh takes a newer entry from a lookup; staged content wins.
func (n *fileNode) refresh(e Entry, now time.Time) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.stage == nil {
		n.entry, n.attrAt = e, now
	}
}

func (n *fileNode) markDeleted() {
	n.mu.Lock()
	n.deleted = true
	n.mu.Unlock()
}

func (n *fileNode) stageEmpty() error {
	f, err := os.CreateTemp(n.fsys.o.StageDir, "stage-")
	if err != nil {
		return err
	}
	n.stage, n.dirty = f, true
	n.restartAhead()
	return nil
}

// restartAhead starts following writes of a stage that is now empty.
func (n *fileNode) restartAhead() {
	n.stopAhead()
	n.ahead = newAhead(n.fsys.o.Backend, n.path, func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.Background(), n.fsys.o.OpTimeout)
	})
}

func (n *fileNode) stopAhead() {
	if n.ahead != nil {
		n.ahead.release(true)
		n.ahead = nil
	}
}

func (n *fileNode) dropStage() {
	if n.stage != nil {
		n.stage.Close()
		os.Remove(n.stage.Name())
		n.stage, n.dirty = nil, false
		n.stopAhead()
	}
}

// getattr fills out from the staged file or the last known entry.
func (n *fileNode) getattr(out *fuse.Attr) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.getattrLocked(out)
}

func (n *fileNode) getattrLocked(out *fuse.Attr) {
	e := n.entry
	e.IsDir = false
	if n.stage != nil {
		if st, err := n.stage.Stat(); err == nil {
			e.Size = st.Size()
			if n.dirty {
				e.ModTime = st.ModTime()
			}
		}
	}
	if n.mtime != nil {
		e.ModTime = *n.mtime
	}
	n.fsys.fillAttr(e, out)
	if n.deleted {
		out.Nlink = 0 // fstat of an open, unlinked file
	}
}

func (n *fileNode) Getattr(ctx context.Context, _ fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.stage == nil && !n.deleted && n.fsys.o.Now().Sub(n.attrAt) >= n.fsys.o.TTL {
		ctx, cancel := n.fsys.opCtx(ctx)
		defer cancel()
		e, err := n.fsys.o.Backend.Stat(ctx, n.path())
		if err != nil {
			return Errno(err)
		}
		n.entry, n.attrAt = e, n.fsys.o.Now()
	}
	n.getattrLocked(&out.Attr)
	return 0
}

// Setattr: size (truncate), mtime and mode are stored; the owner is not and
// is accepted as a no-op so cp -p, tar and rsync -a work.
func (n *fileNode) Setattr(ctx context.Context, fh fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	n.mu.Lock()
	defer n.mu.Unlock()
	if sz, ok := in.GetSize(); ok {
		if errno := n.ensureStagedLocked(ctx, sz == 0); errno != 0 {
			return errno
		}
		if err := n.stage.Truncate(int64(sz)); err != nil {
			return Errno(err)
		}
		if sz == 0 {
			n.restartAhead()
		} else {
			n.stopAhead()
		}
		n.dirty = true
		if n.opens == 0 {
			// truncate(2) by path: no close will follow.
			if errno := n.flushLocked(ctx); errno != 0 {
				return errno
			}
			n.dropStage()
		}
	}
	if a, ok := attrsOf(in); ok {
		switch {
		case n.dirty || n.deleted:
			// Stored after the upload (an unlinked file has nothing to
			// store them on: fchmod of it only changes what fstat shows).
			if a.ModTime != nil {
				n.mtime = a.ModTime
			}
			if a.Mode != nil {
				n.mode = a.Mode
				n.entry.Mode = *a.Mode | ModeValid
			}
		default:
			ctx, cancel := n.fsys.opCtx(ctx)
			defer cancel()
			e, err := n.fsys.o.Backend.SetAttr(ctx, n.path(), a)
			if err != nil {
				return Errno(err)
			}
			if n.stage == nil {
				n.entry, n.attrAt = e, n.fsys.o.Now()
			} else {
				n.entry.ModTime, n.entry.Mode = e.ModTime, e.Mode
			}
			n.mtime, n.mode = nil, nil
		}
	}
	n.getattrLocked(&out.Attr)
	return 0
}

// ensureStagedLocked gives the node a staged copy of its content (empty when
// it is about to be truncated to zero).
func (n *fileNode) ensureStagedLocked(ctx context.Context, empty bool) syscall.Errno {
	if n.stage != nil {
		return 0
	}
	if err := n.stageEmpty(); err != nil {
		return Errno(err)
	}
	n.dirty = false
	if empty || n.entry.Size == 0 && n.entry.FileHash == "" {
		return 0
	}
	n.stopAhead() // the stage starts with the old content
	h := &handle{n: n}
	if errno := h.load(ctx); errno != 0 {
		n.dropStage()
		return errno
	}
	buf := make([]byte, 1<<20)
	for off := int64(0); off < h.cl.Size; {
		m, errno := h.readRemote(ctx, buf[:min(int64(len(buf)), h.cl.Size-off)], off)
		if errno != 0 {
			n.dropStage()
			return errno
		}
		if _, err := n.stage.WriteAt(buf[:m], off); err != nil {
			n.dropStage()
			return Errno(err)
		}
		off += int64(m)
	}
	return 0
}

func (n *fileNode) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	n.mu.Lock()
	defer n.mu.Unlock()
	writable := flags&syscall.O_ACCMODE != syscall.O_RDONLY
	trunc := flags&syscall.O_TRUNC != 0
	if writable || trunc {
		if errno := n.ensureStagedLocked(ctx, trunc); errno != 0 {
			return nil, 0, errno
		}
		if trunc {
			if err := n.stage.Truncate(0); err != nil {
				return nil, 0, Errno(err)
			}
			n.dirty = true
			n.restartAhead()
		}
	}
	h := n.newHandleLocked(writable)
	if n.stage == nil {
		if errno := h.load(ctx); errno != 0 {
			n.opens--
			return nil, 0, errno
		}
	}
	return h, 0, 0
}

func (n *fileNode) newHandle(writable bool) *handle {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.newHandleLocked(writable)
}

func (n *fileNode) newHandleLocked(writable bool) *handle {
	n.opens++
	return &handle{n: n, writable: writable}
}

func (n *fileNode) Read(ctx context.Context, fh fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	h, _ := fh.(*handle)
	n.mu.Lock()
	if n.stage != nil {
		defer n.mu.Unlock()
		m, err := n.stage.ReadAt(dest, off)
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, Errno(err)
		}
		return fuse.ReadResultData(dest[:m]), 0
	}
	n.mu.Unlock()
	if h == nil {
		return nil, syscall.EBADF
	}
	if h.cl.FileHash == "" && h.cl.Size == 0 && !h.loaded {
		if errno := h.load(ctx); errno != 0 {
			return nil, errno
		}
	}
	m, errno := h.read(ctx, dest, off)
	if errno != 0 {
		return nil, errno
	}
	return fuse.ReadResultData(dest[:m]), 0
}

func (n *fileNode) Write(ctx context.Context, fh fs.FileHandle, data []byte, off int64) (uint32, syscall.Errno) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.stage == nil {
		// A handle opened for writing staged the file; this one was not.
		return 0, syscall.EBADF
	}
	m, err := n.stage.WriteAt(data, off)
	if m > 0 {
		n.dirty = true
		n.mtime = nil
	}
	if n.ahead != nil && (m < len(data) || !n.ahead.write(data, off)) {
		n.stopAhead()
	}
	if err != nil {
		return uint32(m), Errno(err)
	}
	return uint32(m), 0
}

// Flush runs at every close(2): written data is uploaded then, and a failed
// upload is the close's error. The staged data stays for the next attempt.
func (n *fileNode) Flush(ctx context.Context, fh fs.FileHandle) syscall.Errno {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.flushLocked(ctx)
}

// Fsync returns only when the server has committed the content.
func (n *fileNode) Fsync(ctx context.Context, fh fs.FileHandle, flags uint32) syscall.Errno {
	return n.Flush(ctx, fh)
}

func (n *fileNode) flushLocked(ctx context.Context) syscall.Errno {
	if n.stage == nil || !n.dirty || n.deleted {
		return 0
	}
	return n.uploadLocked(ctx, n.path())
}

func (n *fileNode) uploadLocked(ctx context.Context, p string) syscall.Errno {
	ctx, cancel := context.WithTimeout(ctx, n.fsys.o.UploadTimeout)
	defer cancel()
	st, err := n.stage.Stat()
	if err != nil {
		return Errno(err)
	}
	var hashes []string
	if n.ahead != nil {
		hashes = n.ahead.chunkHashes(st.Size())
	}
	e, err := n.fsys.o.Backend.Upload(ctx, n.stage, st.Size(), hashes, p)
	if err != nil && Errno(err) == syscall.EDQUOT && n.ahead != nil && n.ahead.releaseNow(ctx) {
		// The chunks sent ahead held their own reservations; with those
		// given back the file may fit (its chunks are then sent again).
		e, err = n.fsys.o.Backend.Upload(ctx, n.stage, st.Size(), hashes, p)
	}
	if err != nil {
		n.fsys.o.Logger.Error("mount: upload failed; the data stays staged for retry",
			"path", p, "staged", n.stage.Name(), "err", err)
		if errno := Errno(err); errno != syscall.EIO && errno != syscall.ENOSPC && errno != syscall.EDQUOT &&
			errno != syscall.EFBIG && errno != syscall.EACCES {
			return syscall.EIO
		} else {
			return errno
		}
	}
	n.dirty = false
	if n.ahead != nil {
		n.ahead.release(false)
	}
	if n.mtime != nil || n.mode != nil {
		// A new version keeps the stored mode, so only a chmod (or a
		// create mode) made while the data was staged is sent here.
		sctx, scancel := n.fsys.opCtx(ctx)
		ae, err := n.fsys.o.Backend.SetAttr(sctx, p, Attrs{Mode: n.mode, ModTime: n.mtime})
		scancel()
		if err != nil {
			return Errno(err)
		}
		e = ae
		n.mtime, n.mode = nil, nil
	}
	n.entry, n.attrAt = e, n.fsys.o.Now()
	if _, parent := n.Parent(); parent != nil {
		if d, ok := parent.Operations().(*dirNode); ok {
			d.touch()
		}
	}
	return 0
}

// Release drops the staged copy once the last handle is closed and the
// server has everything; a failed upload keeps it (and retries once here).
func (n *fileNode) Release(ctx context.Context, fh fs.FileHandle) syscall.Errno {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.opens--
	if n.opens > 0 || n.stage == nil {
		return 0
	}
	if n.dirty && !n.deleted {
		if errno := n.flushLocked(ctx); errno != 0 {
			return errno
		}
	}
	n.dropStage()
	return 0
}

// ---- reading chunks

// handle is one open file; a read-only handle keeps the chunk list of the
// version it opened, revalidated when the server says it changed.
type handle struct {
	n        *fileNode
	writable bool

	mu      sync.Mutex
	loaded  bool
	cl      ChunkList
	path    string
	lastEnd int64
}

func (h *handle) load(ctx context.Context) syscall.Errno {
	ctx, cancel := h.n.fsys.opCtx(ctx)
	defer cancel()
	p := h.n.path()
	cl, err := h.n.fsys.o.Backend.ChunkList(ctx, p)
	if err != nil {
		return Errno(err)
	}
	h.mu.Lock()
	h.cl, h.path, h.loaded = cl, p, true
	h.mu.Unlock()
	return 0
}

func (h *handle) read(ctx context.Context, dest []byte, off int64) (int, syscall.Errno) {
	m, errno := h.readRemote(ctx, dest, off)
	if errno == syscall.ESTALE {
		// The file changed on the server: read the new version.
		if errno = h.load(ctx); errno == 0 {
			m, errno = h.readRemote(ctx, dest, off)
		}
	}
	return m, errno
}

func (h *handle) readRemote(ctx context.Context, dest []byte, off int64) (int, syscall.Errno) {
	h.mu.Lock()
	cl, p := h.cl, h.path
	// The kernel's readahead sends several reads at once, which may arrive
	// out of order: "sequential" allows for that window.
	sequential := off >= h.lastEnd-seqWindow && off <= h.lastEnd+seqWindow
	h.mu.Unlock()
	if off >= cl.Size {
		return 0, 0
	}
	end := min(off+int64(len(dest)), cl.Size)
	i := sort.Search(len(cl.Chunks), func(i int) bool { return cl.Chunks[i].Offset+cl.Chunks[i].Size > off })
	done := 0
	for pos := off; pos < end; i++ {
		if i >= len(cl.Chunks) {
			return done, syscall.EIO
		}
		c := cl.Chunks[i]
		in := pos - c.Offset
		want := min(c.Size-in, end-pos)
		buf := dest[done : done+int(want)]
		if _, ok := h.n.fsys.o.Cache.ReadAt(c, cl.FileHash, buf, in); !ok {
			data, err := h.n.fsys.fetch(ctx, p, cl.FileHash, c)
			if err != nil {
				return done, Errno(err)
			}
			copy(buf, data[in:in+want])
		}
		done += int(want)
		pos += want
	}
	h.mu.Lock()
	h.lastEnd = end
	h.mu.Unlock()
	if sequential && h.n.fsys.o.Prefetch > 0 {
		h.n.fsys.prefetchAfter(p, cl, i)
	}
	return done, 0
}

// seqWindow is how far a read may be from the end of the previous one and
// still count as sequential (a few kernel readahead requests).
const seqWindow = 4 << 20

// fetch gets one chunk from the server once, however many readers want it,
// and caches it (after checking its MD5).
func (f *FS) fetch(ctx context.Context, p, fileHash string, c ChunkRef) ([]byte, error) {
	v, err, _ := f.flights.Do(chunkKey(c), func() (any, error) {
		ctx, cancel := f.opCtx(context.WithoutCancel(ctx))
		defer cancel()
		data := make([]byte, c.Size)
		if err := f.o.Backend.ReadRange(ctx, p, fileHash, c.Offset, data); err != nil {
			return nil, err
		}
		if err := f.o.Cache.Put(c, fileHash, data); err != nil {
			return nil, err
		}
		return data, nil
	})
	if err != nil {
		return nil, err
	}
	return v.([]byte), nil
}

// prefetchAfter fetches the next chunks in the background, a bounded number
// at a time; when all slots are busy it simply does less.
func (f *FS) prefetchAfter(p string, cl ChunkList, from int) {
	for i := from; i < len(cl.Chunks) && i < from+f.o.Prefetch; i++ {
		c := cl.Chunks[i]
		if f.o.Cache.Has(c) {
			continue
		}
		select {
		case f.prefetch <- struct{}{}:
		default:
			return
		}
		go func() {
			defer func() { <-f.prefetch }()
			f.fetch(context.Background(), p, cl.FileHash, c)
		}()
	}
}
