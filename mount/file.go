package mount

import (
	"context"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"netdisk/chunker"
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
	// local: created here with write-back and not stored on the server yet;
	// this mount's listings and lookups show it from here (dir.go).
	local bool
	noted bool // the stage has a write-back note (staging.go)

	// Network calls run without mu (a stat of a file must not wait for its
	// upload over a slow link). busy marks one in progress that uses the
	// stage or fills it: whatever changes the stage, its ahead or dirty
	// waits on idle until it ends; reads and attributes do not.
	busy bool
	idle sync.Cond // L is &mu, set on first wait
	// gen counts entries published; a Stat started before a newer entry
	// was published does not overwrite it.
	gen     uint64
	changed time.Time // ctime: last chmod or rename seen here (writes move the mtime)
	// cl is the chunk list a handle last loaded: it opens the file while the
	// server is out of reach, if the entry still names its version.
	cl *ChunkList
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

// waitIdleLocked waits (mu held) until no upload or download runs.
func (n *fileNode) waitIdleLocked() {
	for n.busy {
		n.idle.L = &n.mu
		n.idle.Wait()
	}
}

// beginBusyLocked waits for the node to be idle and marks it busy; the
// caller then drops mu for its network call and calls endBusyLocked with mu
// held again.
func (n *fileNode) beginBusyLocked() {
	n.waitIdleLocked()
	n.busy = true
}

func (n *fileNode) endBusyLocked() {
	n.busy = false
	n.idle.Broadcast()
}

func (n *fileNode) setEntryLocked(e Entry) {
	n.entry, n.attrAt = e, n.fsys.o.Now()
	n.gen++
}

// refresh takes a newer entry from a lookup; staged content wins.
func (n *fileNode) refresh(e Entry, now time.Time) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.stage == nil {
		n.entry, n.attrAt = e, now
		n.gen++
	}
}

// removeLocal removes a file created here that the server never got
// (write-back): true when it was still such a file once no upload of it
// ran, else the caller removes it on the server as usual.
func (n *fileNode) removeLocal() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.waitIdleLocked()
	if !n.local || n.deleted {
		return false
	}
	n.deleted = true
	if n.opens == 0 {
		n.dropStage()
	} else {
		n.dropNoteLocked() // the stage stays for open handles (dropped at release)
	}
	return true
}

func (n *fileNode) isDeleted() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.deleted
}

func (n *fileNode) markDeleted() {
	n.mu.Lock()
	n.dropNoteLocked()
	n.deleted = true
	n.mu.Unlock()
}

func (n *fileNode) stageEmpty() error {
	f, err := createTempIn(n.fsys.o.StageDir, "stage-")
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
	n.ahead.bg = &n.fsys.bg
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
		n.dropNoteLocked()
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
	setCtime(out, n.changed)
	if n.deleted {
		out.Nlink = 0 // fstat of an open, unlinked file
	}
}

func (n *fileNode) Getattr(ctx context.Context, _ fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.stage == nil && !n.deleted && n.fsys.o.Now().Sub(n.attrAt) >= n.fsys.o.TTL {
		gen, p := n.gen, n.path()
		n.mu.Unlock()
		ctx, cancel := n.fsys.opCtx(ctx)
		e, err := n.fsys.o.Backend.Stat(ctx, p)
		cancel()
		n.mu.Lock()
		if err != nil && !offline(err) {
			return Errno(err)
		}
		// Out of reach, the attributes last seen answer (link.go).
		if err == nil && n.gen == gen && n.stage == nil {
			n.setEntryLocked(e)
		}
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
		n.waitIdleLocked()
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
		n.changed = n.fsys.o.Now()
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
			p := n.path()
			n.mu.Unlock()
			ctx, cancel := n.fsys.opCtx(ctx)
			e, err := n.fsys.o.Backend.SetAttr(ctx, p, a)
			cancel()
			n.mu.Lock()
			if err != nil {
				return Errno(err)
			}
			if n.stage == nil {
				n.setEntryLocked(e)
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
// it is about to be truncated to zero). The download runs without mu.
func (n *fileNode) ensureStagedLocked(ctx context.Context, empty bool) syscall.Errno {
	n.waitIdleLocked()
	if n.stage != nil {
		return 0
	}
	if empty || n.entry.Size == 0 && n.entry.FileHash == "" {
		if err := n.stageEmpty(); err != nil {
			return Errno(err)
		}
		n.dirty = false
		return 0
	}
	f, err := os.CreateTemp(n.fsys.o.StageDir, "stage-")
	if err != nil {
		return Errno(err)
	}
	n.beginBusyLocked()
	n.mu.Unlock()
	errno := n.download(ctx, f)
	n.mu.Lock()
	n.endBusyLocked()
	if errno == 0 && n.stage != nil {
		errno = syscall.EIO // cannot happen: only busy work installs a stage
	}
	if errno != 0 {
		f.Close()
		os.Remove(f.Name())
		return errno
	}
	// The stage starts with the old content: nothing to send ahead.
	n.stage, n.dirty = f, false
	n.stopAhead()
	return 0
}

// download copies the file's current version into f.
func (n *fileNode) download(ctx context.Context, f *os.File) syscall.Errno {
	h := &handle{n: n}
	if errno := h.load(ctx); errno != 0 {
		return errno
	}
	buf := make([]byte, 1<<20)
	for off := int64(0); off < h.cl.Size; {
		m, errno := h.readRemote(ctx, buf[:min(int64(len(buf)), h.cl.Size-off)], off)
		if errno != 0 {
			return errno
		}
		if _, err := f.WriteAt(buf[:m], off); err != nil {
			return Errno(err)
		}
		off += int64(m)
	}
	return 0
}

// preserve keeps the content of a file that is open but not staged before
// its name goes away (unlink, or another file renamed over it): the server
// cannot serve a version by hash once no path holds it, so its bytes are
// copied into a local stage, which answers reads until the last close.
func (n *fileNode) preserve(ctx context.Context) syscall.Errno {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.waitIdleLocked()
	if n.opens == 0 || n.stage != nil || n.deleted {
		return 0
	}
	return n.ensureStagedLocked(ctx, false)
}

func (n *fileNode) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	n.mu.Lock()
	defer n.mu.Unlock()
	writable := flags&syscall.O_ACCMODE != syscall.O_RDONLY
	trunc := flags&syscall.O_TRUNC != 0
	if writable || trunc {
		n.waitIdleLocked()
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
		// The chunk list pins the version this handle reads.
		n.mu.Unlock()
		errno := h.load(ctx)
		n.mu.Lock()
		if errno != 0 {
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

func (n *fileNode) Write(ctx context.Context, fh fs.FileHandle, data []byte, off int64) (uint32, syscall.Errno) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.waitIdleLocked()
	if n.stage == nil {
		// A handle opened for writing staged the file; this one was not.
		return 0, syscall.EBADF
	}
	// ahead.write may wait for a chunk send to finish (a writer faster
	// than the link is held back): that happens without mu.
	stage, a := n.stage, n.ahead
	n.beginBusyLocked()
	n.mu.Unlock()
	m, err := stage.WriteAt(data, off)
	inOrder := a != nil && m == len(data) && a.write(data, off)
	n.mu.Lock()
	n.endBusyLocked()
	if m > 0 {
		n.dirty = true
		n.mtime = nil
	}
	if a != nil && !inOrder {
		n.stopAhead()
	}
	if err != nil {
		return uint32(m), Errno(err)
	}
	return uint32(m), 0
}

// Flush runs at every close(2): written data is uploaded then, and a failed
// upload is the close's error. The staged data stays for the next attempt.
// With write-back the file is queued for upload instead (writeback.go).
func (n *fileNode) Flush(ctx context.Context, fh fs.FileHandle) syscall.Errno {
	if wb := n.fsys.wb; wb != nil {
		if n.pendingUpload() {
			wb.add(n)
		}
		return 0
	}
	return n.Fsync(ctx, fh, 0)
}

// Fsync returns only when the server has committed the content, with or
// without write-back (an upload already running is waited for).
func (n *fileNode) Fsync(ctx context.Context, fh fs.FileHandle, flags uint32) syscall.Errno {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.flushLocked(ctx)
}

// pendingUpload says the stage holds data the server is still to get, and
// notes where it goes (for a later mount's recovery, staging.go).
func (n *fileNode) pendingUpload() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.stage != nil && n.dirty && !n.deleted {
		n.writeNoteLocked()
		return true
	}
	return false
}

// isLocal says n was created here and the server does not have it yet.
func (n *fileNode) isLocal() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.local && !n.deleted
}

func (n *fileNode) flushLocked(ctx context.Context) syscall.Errno {
	n.waitIdleLocked()
	if n.stage == nil || !n.dirty || n.deleted {
		return 0
	}
	errno, _ := n.uploadLocked(ctx, n.path())
	return errno
}

// uploadLocked stores the stage at p; stored says the content reached the
// server (even if storing the attributes then failed). It is called with mu
// held and the node idle, and drops mu for the network calls: writers wait
// (the bytes being sent must not change), stat and reads do not.
//
// The upload is not tied to the FUSE request's context: the kernel cancels
// that when the calling process gets any signal (a progress timer, Go's
// preemption), and a create or close must then still complete, not fail
// half done. UploadTimeout bounds it instead.
func (n *fileNode) uploadLocked(ctx context.Context, p string) (errno syscall.Errno, stored bool) {
	stage, a, mtime, mode := n.stage, n.ahead, n.mtime, n.mode
	n.beginBusyLocked()
	n.mu.Unlock()
	e, errno, stored, refused := n.upload(context.WithoutCancel(ctx), stage, a, mtime, mode, p)
	n.mu.Lock()
	n.endBusyLocked()
	if stored {
		// Writers waited, so the stage is what was sent.
		n.dirty, n.local = false, false
		n.dropNoteLocked()
		if a != nil && n.ahead == a {
			a.release(false)
		}
	}
	if refused {
		// Refused by a WebDAV lock (upload says why): the version is dropped.
		n.dirty, n.mtime, n.mode = false, nil, nil
	}
	if errno != 0 {
		return errno, stored
	}
	// A chmod or touch made during the upload is still to be stored.
	if n.mtime == mtime {
		n.mtime = nil
	}
	if n.mode == mode {
		n.mode = nil
	}
	n.setEntryLocked(e)
	if _, parent := n.Parent(); parent != nil {
		if d, ok := parent.Operations().(*dirNode); ok {
			d.touch()
		}
	}
	return 0, true
}

// upload sends stage (mu not held) and then the attributes set while it was
// staged.
//
// refused says a WebDAV lock held elsewhere refused the content: final, so
// the caller drops the version instead of keeping it for a retry.
func (n *fileNode) upload(ctx context.Context, stage *os.File, a *ahead, mtime *time.Time, mode *uint32, p string) (e Entry, errno syscall.Errno, stored, refused bool) {
	ctx, cancel := context.WithTimeout(ctx, n.fsys.o.UploadTimeout)
	defer cancel()
	st, err := stage.Stat()
	if err != nil {
		return Entry{}, Errno(err), false, false
	}
	var sums []chunker.Sum
	if a != nil {
		sums = a.chunkSums(st.Size())
	}
	be := n.fsys.o.Backend
	attrs := Attrs{Mode: mode, ModTime: mtime}
	e, err = be.Upload(ctx, stage, st.Size(), sums, p, attrs)
	if err != nil && Errno(err) == syscall.EDQUOT && a != nil && a.releaseNow(ctx) {
		// The chunks sent ahead held their own reservations; with those
		// given back the file may fit (its chunks are then sent again).
		e, err = be.Upload(ctx, stage, st.Size(), sums, p, attrs)
	}
	if err != nil && refusedByLock(err) {
		// A WebDAV lock held elsewhere refused this version: a final
		// answer, not a transient failure. The application gets EACCES; the
		// caller drops the version rather than keep it for a retry that
		// would land it later behind the lock holder's back.
		n.fsys.o.Logger.Warn("mount: write refused by a WebDAV lock; the new version is discarded", "path", logName(p))
		return Entry{}, Errno(err), false, true
	}
	if err != nil && Errno(err) == syscall.EROFS {
		// A read-only share: final, as a lock's refusal; a retry would
		// only be refused again.
		n.fsys.o.Logger.Warn("mount: write refused by a read-only share; the new version is discarded", "path", logName(p))
		return Entry{}, syscall.EROFS, false, true
	}
	if err != nil {
		if offline(err) {
			// Said once for all files by the link (link.go); the upload is
			// tried again when the server is back.
			n.fsys.o.Logger.Debug("mount: upload waits for the server", "path", logName(p))
		} else {
			n.fsys.o.Logger.Error("mount: upload failed; the data stays staged for retry",
				"path", logName(p), "staged", stage.Name(), "err", logErr(err))
		}
		if errno := Errno(err); errno != syscall.EIO && errno != syscall.ENOSPC && errno != syscall.EDQUOT &&
			errno != syscall.EFBIG && errno != syscall.EACCES && errno != syscall.EHOSTDOWN {
			return Entry{}, syscall.EIO, false, false
		} else {
			return Entry{}, errno, false, false
		}
	}
	if !attrs.storedIn(e) {
		// A new version keeps the stored mode, so only a chmod (or a
		// create mode) made while the data was staged is sent here, when
		// the upload could not store it (a file sent in chunks).
		sctx, scancel := n.fsys.opCtx(ctx)
		ae, err := be.SetAttr(sctx, p, Attrs{Mode: mode, ModTime: mtime})
		scancel()
		if err != nil {
			return Entry{}, Errno(err), true, false
		}
		e = ae
	}
	return e, 0, true, false
}

// Release drops the staged copy once the last handle is closed and the
// server has everything; a failed upload keeps it (and retries once here).
func (n *fileNode) Release(ctx context.Context, fh fs.FileHandle) syscall.Errno {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.opens--
	if wb := n.fsys.wb; wb != nil && n.opens == 0 && n.stage != nil && (n.busy || n.dirty && !n.deleted) {
		// The write-back worker uploads it if need be and then drops the
		// stage (writeBackNow). It was queued at Flush; it is again here
		// in case that upload failed, and when an upload runs now: a
		// release waits for no upload (the kernel's unmount waits for the
		// release).
		n.mu.Unlock()
		wb.add(n)
		n.mu.Lock()
		return 0
	}
	n.waitIdleLocked()
	if n.opens > 0 || n.stage == nil {
		return 0
	}
	if n.dirty && !n.deleted {
		if errno := n.flushLocked(ctx); errno != 0 {
			return errno
		}
		if n.opens > 0 {
			return 0 // opened again while the upload ran without mu
		}
	}
	n.dropStage()
	return 0
}
