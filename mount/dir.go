package mount

// A folder of the mount (dirNode): lookups, listings, attributes and the
// changes of its entries (create, mkdir, unlink, rmdir, rename).

import (
	"context"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

type dirNode struct {
	fs.Inode
	fsys *FS

	mu       sync.Mutex
	entry    Entry
	attrAt   time.Time
	listing  map[string]Entry // children as last listed
	listedAt time.Time
	// changes counts our own changes of the entries (noteChild): a listing
	// asked for before one of them and answered after may miss it or undo
	// it, so it is not kept as fresh (list).
	changes uint64
	// Our own changes of the entries move the mtime at once; the server's
	// mtime replaces ours as soon as it differs from the one we saw
	// (seenMTime), i.e. when the server moved it too.
	localMTime, seenMTime time.Time
	changed               time.Time // ctime: last change seen here
}

var (
	_ fs.NodeLookuper  = (*dirNode)(nil)
	_ fs.NodeGetattrer = (*dirNode)(nil)
	_ fs.NodeSetattrer = (*dirNode)(nil)
	_ fs.NodeReaddirer = (*dirNode)(nil)
	_ fs.NodeMkdirer   = (*dirNode)(nil)
	_ fs.NodeSymlinker = (*dirNode)(nil)
	_ fs.NodeCreater   = (*dirNode)(nil)
	_ fs.NodeUnlinker  = (*dirNode)(nil)
	_ fs.NodeRmdirer   = (*dirNode)(nil)
	_ fs.NodeRenamer   = (*dirNode)(nil)
	_ fs.NodeStatfser  = (*dirNode)(nil)
)

func (d *dirNode) path() string { return nodePath(&d.Inode) }

// cached returns the child's entry from a fresh listing: found, and whether
// the listing was fresh enough to answer at all.
func (d *dirNode) cached(name string) (Entry, bool, bool, time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.listing == nil || d.fsys.o.Now().Sub(d.listedAt) >= d.fsys.o.TTL {
		return Entry{}, false, false, time.Time{}
	}
	e, ok := d.listing[name]
	return e, ok, true, d.listedAt
}

// noteChild keeps a fresh listing in step with our own changes.
func (d *dirNode) noteChild(name string, e *Entry) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.changes++
	if d.listing == nil {
		return
	}
	if e == nil {
		delete(d.listing, name)
	} else {
		d.listing[name] = *e
	}
}

func (d *dirNode) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if errno := lookupName(d.path(), name); errno != 0 {
		return nil, errno
	}
	if n := d.localChild(name); n != nil {
		// Created here, not on the server yet (write-back).
		n.getattr(&out.Attr)
		return &n.Inode, 0
	}
	e, found, fresh, at := d.cached(name)
	if fresh && !found {
		return nil, syscall.ENOENT
	}
	if !fresh {
		ctx, cancel := d.fsys.opCtx(ctx)
		defer cancel()
		var err error
		if e, err = d.fsys.o.Backend.Stat(ctx, joinPath(d.path(), name)); err != nil {
			if !offline(err) {
				return nil, Errno(err)
			}
			// The server is out of reach: answer as last seen.
			return d.lookupStale(name, Errno(err), out)
		}
		e.Name = name
		at = d.fsys.o.Now()
	}
	ch := d.childInode(ctx, name, e, at, &out.Attr)
	if n, ok := ch.Operations().(*dirNode); ok && !n.listingFresh() && !d.fsys.link.isDown() {
		// Its nlink (2 + subdirectories) needs a listing: the kernel
		// answers the stat that follows a lookup from the lookup's
		// attributes, so they must be right here.
		lctx, cancel := d.fsys.opCtx(ctx)
		// (A new inode is not in the tree yet: its path comes from here.)
		_, errno := n.list(lctx, joinPath(d.path(), name))
		cancel()
		if errno != 0 && errno != syscall.EHOSTDOWN { // lost meanwhile: nlink as known
			return nil, errno
		}
		n.mu.Lock()
		n.fillLocked(&out.Attr)
		n.mu.Unlock()
	}
	return ch, 0
}

// lookupStale answers a lookup from what the mount last saw while the server
// is out of reach: the child node if it has one, else the folder's listing
// however old (not in it: ENOENT); with neither, errno.
func (d *dirNode) lookupStale(name string, errno syscall.Errno, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if ch := d.GetChild(name); ch != nil {
		switch n := ch.Operations().(type) {
		case *fileNode:
			n.getattr(&out.Attr)
			return ch, 0
		case *dirNode:
			n.mu.Lock()
			n.fillLocked(&out.Attr)
			n.mu.Unlock()
			return ch, 0
		case *symlinkNode:
			n.getattr(&out.Attr)
			return ch, 0
		}
	}
	d.mu.Lock()
	listing := d.listing
	e, found := listing[name]
	at := d.listedAt
	d.mu.Unlock()
	if listing == nil {
		return nil, errno
	}
	if !found {
		return nil, syscall.ENOENT
	}
	return d.childInode(context.Background(), name, e, at, &out.Attr), 0
}

func (d *dirNode) listingFresh() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.listing != nil && d.fsys.o.Now().Sub(d.listedAt) < d.fsys.o.TTL
}

// setEntryLocked takes the server's entry.
func (d *dirNode) setEntryLocked(e Entry, now time.Time) {
	if !d.localMTime.IsZero() && !e.ModTime.Equal(d.seenMTime) {
		d.localMTime = time.Time{}
	}
	d.entry, d.attrAt = e, now
}

// fillLocked fills out from the entry and what the mount knows beyond it.
func (d *dirNode) fillLocked(out *fuse.Attr) {
	e := d.entry
	e.IsDir = true
	if !d.localMTime.IsZero() {
		e.ModTime = d.localMTime
	}
	d.fsys.fillAttr(e, out)
	if d.listing != nil {
		for _, c := range d.listing {
			if c.IsDir {
				out.Nlink++
			}
		}
	}
	setCtime(out, d.changed)
}

// childInode returns the existing inode for name when it has the same type
// (so a file's staged data survives a re-lookup), else a new one. e was
// known at time at: a node whose own attributes are newer (a chmod or an
// upload since the parent was listed) keeps them.
func (d *dirNode) childInode(ctx context.Context, name string, e Entry, at time.Time, out *fuse.Attr) *fs.Inode {
	now := d.fsys.o.Now()
	if ch := d.GetChild(name); ch != nil {
		switch n := ch.Operations().(type) {
		case *fileNode:
			if !e.IsDir && e.Target == "" {
				n.mu.Lock()
				newer := n.attrAt.After(at)
				n.mu.Unlock()
				if !newer {
					n.refresh(e, at)
				}
				n.getattr(out)
				return ch
			}
		case *dirNode:
			if e.IsDir {
				n.mu.Lock()
				if !n.attrAt.After(at) {
					n.setEntryLocked(e, at)
				}
				n.fillLocked(out)
				n.mu.Unlock()
				return ch
			}
		case *symlinkNode:
			// A link's target never changes: a different target is
			// another link (replaced by a rename), so another inode.
			if e.Target != "" && e.Target == n.target() {
				n.refresh(e)
				n.getattr(out)
				return ch
			}
		}
	}
	if e.IsDir {
		d.fsys.fillAttr(e, out)
		return d.NewInode(ctx, &dirNode{fsys: d.fsys, entry: e, attrAt: now}, fs.StableAttr{Mode: syscall.S_IFDIR})
	}
	if e.Target != "" {
		n := &symlinkNode{fsys: d.fsys, entry: e}
		n.getattr(out)
		return d.NewInode(ctx, n, fs.StableAttr{Mode: syscall.S_IFLNK})
	}
	n := &fileNode{fsys: d.fsys, entry: e, attrAt: now}
	n.getattr(out)
	return d.NewInode(ctx, n, fs.StableAttr{Mode: syscall.S_IFREG})
}

// Getattr answers from the entry and a listing (nlink is 2 + the number of
// subdirectories, which find and others rely on), each asked for again
// after the TTL.
func (d *dirNode) Getattr(ctx context.Context, _ fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	d.mu.Lock()
	fresh := !d.attrAt.IsZero() && d.fsys.o.Now().Sub(d.attrAt) < d.fsys.o.TTL
	d.mu.Unlock()
	ctx, cancel := d.fsys.opCtx(ctx)
	defer cancel()
	// While the server is out of reach the attributes and listing last
	// seen answer (EHOSTDOWN: see link.go).
	if !fresh {
		ne, err := d.fsys.o.Backend.Stat(ctx, d.path())
		if err != nil && !offline(err) {
			return Errno(err)
		}
		if err == nil {
			d.mu.Lock()
			d.setEntryLocked(ne, d.fsys.o.Now())
			d.mu.Unlock()
		}
	}
	if !d.listingFresh() {
		if _, errno := d.list(ctx, d.path()); errno != 0 && errno != syscall.EHOSTDOWN {
			return errno
		}
	}
	d.mu.Lock()
	d.fillLocked(&out.Attr)
	d.mu.Unlock()
	return 0
}

// Setattr on a directory stores the mtime and mode (chmod, tar, rsync -a);
// the owner is not stored and is accepted as a no-op.
func (d *dirNode) Setattr(ctx context.Context, _ fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if a, ok := attrsOf(in); ok {
		ctx, cancel := d.fsys.opCtx(ctx)
		defer cancel()
		e, err := d.fsys.o.Backend.SetAttr(ctx, d.path(), a)
		if err != nil {
			return Errno(err)
		}
		d.mu.Lock()
		if a.ModTime != nil {
			d.localMTime = time.Time{} // the time set is the truth
		}
		d.setEntryLocked(e, d.fsys.o.Now())
		d.changed = d.fsys.o.Now()
		d.mu.Unlock()
	}
	return d.Getattr(ctx, nil, out)
}

// attrsOf picks the attributes the drive stores out of a setattr request.
func attrsOf(in *fuse.SetAttrIn) (Attrs, bool) {
	var a Attrs
	if t, ok := in.GetMTime(); ok {
		a.ModTime = &t
	}
	if m, ok := in.GetMode(); ok {
		m &= 0o7777
		a.Mode = &m
	}
	return a, a.ModTime != nil || a.Mode != nil
}

func (d *dirNode) Readdir(ctx context.Context) (fs.DirStream, syscall.Errno) {
	ctx, cancel := d.fsys.opCtx(ctx)
	defer cancel()
	listing, errno := d.list(ctx, d.path())
	if errno == syscall.EHOSTDOWN {
		listing, errno = d.staleListing(errno)
	}
	if errno != 0 {
		return nil, errno
	}
	// The listing may be the one kept (noteChild changes it): read under
	// the lock. The names are the listing's own strings, not copies.
	d.mu.Lock()
	out := make([]fuse.DirEntry, 0, len(listing))
	for name, e := range listing {
		mode := uint32(syscall.S_IFREG)
		switch {
		case e.IsDir:
			mode = syscall.S_IFDIR
		case e.Target != "":
			mode = syscall.S_IFLNK
		}
		out = append(out, fuse.DirEntry{Name: name, Mode: mode})
	}
	d.mu.Unlock()
	slices.SortFunc(out, func(a, b fuse.DirEntry) int { return strings.Compare(a.Name, b.Name) })
	return fs.NewListDirStream(out), 0
}

// staleListing is the listing last seen, with the files created here since
// (write-back), while the server is out of reach; with none, errno. It is
// the listing kept: read it under d.mu.
func (d *dirNode) staleListing(errno syscall.Errno) (map[string]Entry, syscall.Errno) {
	// The files' attributes first: a file's lock is taken before its
	// folder's (uploadLocked), never after.
	var local []Entry
	for name, n := range d.localChildren() {
		if n.isDeleted() {
			continue
		}
		var a fuse.Attr
		n.getattr(&a)
		local = append(local, Entry{Name: name, Size: int64(a.Size), ModTime: a.ModTime(), Mode: a.Mode&0o7777 | ModeValid})
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.listing == nil {
		return nil, errno
	}
	for _, e := range local {
		d.listing[e.Name] = e
	}
	return d.listing, 0
}

// listPage is how many entries a listing asks the server for at once: a
// page is all the mount holds besides the listing it builds.
var listPage = 1000

// list asks the server for the children of d, at path p, a page at a time,
// and keeps them as the listing, which it returns (read it under d.mu: it
// may be the one kept).
func (d *dirNode) list(ctx context.Context, p string) (map[string]Entry, syscall.Errno) {
	d.mu.Lock()
	changes := d.changes
	d.mu.Unlock()
	// Taken before asking: a file whose upload lands while we ask is then
	// in one of the two.
	local := d.localChildren()
	listing := map[string]Entry{}
	for cursor := ""; ; {
		es, next, err := d.fsys.o.Backend.ListPage(ctx, p, cursor, listPage)
		if err != nil {
			return nil, Errno(err)
		}
		for _, e := range es {
			listing[e.Name] = e
		}
		if next == "" {
			break
		}
		cursor = next
	}
	// Files created here whose upload is still queued exist for this
	// mount's users (close-to-open consistency, writeback.go).
	for name, n := range local {
		if _, dup := listing[name]; dup || n.isDeleted() {
			continue
		}
		var a fuse.Attr
		n.getattr(&a)
		listing[name] = Entry{Name: name, Size: int64(a.Size), ModTime: a.ModTime(), Mode: a.Mode&0o7777 | ModeValid}
	}
	d.mu.Lock()
	if d.changes == changes {
		d.listing, d.listedAt = listing, d.fsys.o.Now()
	}
	// Else a rename, create or removal made here landed while we asked:
	// the answer (or the local files taken before it) may still show a
	// name that rename moved away, and a lookup answered from it would
	// make the next create at that name fail with EEXIST. The listing
	// kept in step by noteChild stays; the next lookup asks the server.
	d.mu.Unlock()
	return listing, 0
}

func (d *dirNode) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if errno := d.fsys.checkName(d.path(), name); errno != 0 {
		return nil, errno
	}
	ctx, cancel := d.fsys.opCtx(ctx)
	defer cancel()
	p := joinPath(d.path(), name)
	if err := d.fsys.o.Backend.Mkdir(ctx, p, mode&0o7777); err != nil {
		return nil, Errno(err)
	}
	e, err := d.fsys.o.Backend.Stat(ctx, p)
	if err != nil {
		return nil, Errno(err)
	}
	e.Name = name
	d.noteChild(name, &e)
	d.touch()
	ch := d.childInode(ctx, name, e, d.fsys.o.Now(), &out.Attr)
	if n, ok := ch.Operations().(*dirNode); ok {
		// New and empty: its listing is known without asking.
		n.mu.Lock()
		n.listing, n.listedAt = map[string]Entry{}, d.fsys.o.Now()
		n.fillLocked(&out.Attr)
		n.mu.Unlock()
	}
	return ch, 0
}

// touch records that an entry was added, removed or renamed here: the
// mtime and ctime move now, and our attributes are asked for again, the
// server's mtime taking over once it moved too (setEntryLocked).
func (d *dirNode) touch() {
	d.mu.Lock()
	now := d.fsys.o.Now()
	if d.localMTime.IsZero() {
		d.seenMTime = d.entry.ModTime
	}
	d.localMTime, d.changed = now, now
	d.attrAt = time.Time{}
	d.mu.Unlock()
}

// Create stages an empty file and stores it at once, so the name exists on
// the server (for rename, other clients, listings) while it is written; with
// write-back it is stored with its content after the close. The
// mode (the kernel has applied the umask) is stored with it unless it is
// the default a new file shows anyway, which saves a call per file in cp -r.
func (d *dirNode) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	if errno := d.fsys.checkName(d.path(), name); errno != 0 {
		return nil, nil, 0, errno
	}
	n := &fileNode{fsys: d.fsys}
	if err := n.stageEmpty(); err != nil {
		return nil, nil, 0, Errno(err)
	}
	perm := mode & 0o7777
	n.entry = Entry{Name: name, ModTime: d.fsys.o.Now(), Mode: perm | ModeValid}
	if perm != defaultFileMode {
		n.mode = &perm
	}
	ch := d.NewInode(ctx, n, fs.StableAttr{Mode: syscall.S_IFREG})
	p := joinPath(d.path(), name)
	var errno syscall.Errno
	var stored bool
	if d.fsys.wb != nil {
		n.local = true
	} else {
		n.mu.Lock()
		errno, stored = n.uploadLocked(ctx, p)
		n.mu.Unlock()
	}
	if errno != 0 {
		n.dropStage()
		if stored {
			// The create fails as a whole: no empty file is left behind
			// to make the caller's retry (O_EXCL) fail with EEXIST.
			rctx, cancel := d.fsys.opCtx(ctx)
			if err := d.fsys.o.Backend.Remove(rctx, p); err != nil {
				d.fsys.o.Logger.Warn("mount: removing a half-created file failed", "path", logName(p), "err", logErr(err))
			}
			cancel()
		}
		return nil, nil, 0, errno
	}
	d.noteChild(name, &n.entry)
	d.touch()
	h := n.newHandle(true)
	n.getattr(&out.Attr)
	return ch, h, 0, 0
}

func (d *dirNode) Unlink(ctx context.Context, name string) syscall.Errno {
	return d.remove(ctx, name)
}

func (d *dirNode) Rmdir(ctx context.Context, name string) syscall.Errno {
	return d.remove(ctx, name)
}

func (d *dirNode) remove(ctx context.Context, name string) syscall.Errno {
	if n := d.localChild(name); n != nil && n.removeLocal() {
		// Never reached the server: nothing to remove there.
		d.noteChild(name, nil)
		d.touch()
		return 0
	}
	var file *fileNode
	if ch := d.GetChild(name); ch != nil {
		switch n := ch.Operations().(type) {
		case *fileNode:
			file = n
		case *dirNode:
			if len(n.localChildren()) > 0 {
				// Its files still queued (write-back) make it not empty,
				// whatever the server says.
				return syscall.ENOTEMPTY
			}
		}
	}
	if errno := d.preserveChild(ctx, name); errno != 0 {
		return errno
	}
	if file != nil {
		// No upload of it may run (and land after the removal, bringing it
		// back) while the server removes it.
		file.mu.Lock()
		file.beginBusyLocked()
		file.mu.Unlock()
		defer func() {
			file.mu.Lock()
			file.endBusyLocked()
			file.mu.Unlock()
		}()
	}
	ctx, cancel := d.fsys.opCtx(ctx)
	defer cancel()
	if err := d.fsys.o.Backend.Remove(ctx, joinPath(d.path(), name)); err != nil {
		return Errno(err)
	}
	if file != nil {
		file.markDeleted()
	}
	d.noteChild(name, nil)
	d.touch()
	return 0
}

// localChild is the child file name when it was created here and the
// server does not have it yet (write-back), else nil.
func (d *dirNode) localChild(name string) *fileNode {
	if d.fsys.wb == nil {
		return nil
	}
	if ch := d.GetChild(name); ch != nil {
		if n, ok := ch.Operations().(*fileNode); ok && n.isLocal() {
			return n
		}
	}
	return nil
}

// localChildren are the child files created here that the server does not
// have yet (write-back), by name.
func (d *dirNode) localChildren() map[string]*fileNode {
	if d.fsys.wb == nil {
		return nil
	}
	var out map[string]*fileNode
	for name, ch := range d.Children() {
		if n, ok := ch.Operations().(*fileNode); ok && n.isLocal() {
			if out == nil {
				out = map[string]*fileNode{}
			}
			out[name] = n
		}
	}
	return out
}

// preserveChild keeps the bytes of the child file name for its open
// handles before the name stops holding them (see fileNode.preserve).
func (d *dirNode) preserveChild(ctx context.Context, name string) syscall.Errno {
	if ch := d.GetChild(name); ch != nil {
		if n, ok := ch.Operations().(*fileNode); ok {
			return n.preserve(ctx)
		}
	}
	return 0
}

const (
	renameNoReplace = 1 // RENAME_NOREPLACE
	renameExchange  = 2 // RENAME_EXCHANGE
)

func (d *dirNode) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	if flags&renameExchange != 0 {
		return syscall.ENOTSUP
	}
	nd, ok := newParent.(*dirNode)
	if !ok {
		return syscall.EXDEV
	}
	if errno := d.fsys.checkName(nd.path(), newName); errno != 0 {
		return errno
	}
	if ch := d.GetChild(name); ch != nil && ch.IsDir() {
		// A queued file's path is computed when its upload starts: none
		// may run, or wait, while a folder above it moves (write-back).
		if err := d.fsys.Sync(ctx); err != nil {
			return Errno(err)
		}
	}
	if n := nd.localChild(newName); n != nil {
		// The server must know the file this rename replaces.
		n.mu.Lock()
		errno := n.flushLocked(ctx)
		n.mu.Unlock()
		if errno != 0 {
			return errno
		}
	}
	src, dst := joinPath(d.path(), name), joinPath(nd.path(), newName)
	// Data written but not yet stored goes first, so the new name never
	// shows an older version.
	if ch := d.GetChild(name); ch != nil {
		if n, ok := ch.Operations().(*fileNode); ok {
			n.mu.Lock()
			errno := n.flushLocked(ctx)
			n.mu.Unlock()
			if errno != 0 {
				return errno
			}
		}
	}
	ctx, cancel := d.fsys.opCtx(ctx)
	defer cancel()
	be := d.fsys.o.Backend
	se, err := be.Stat(ctx, src)
	if err != nil {
		return Errno(err)
	}
	overwrite := flags&renameNoReplace == 0
	if de, err := be.Stat(ctx, dst); err == nil {
		if !overwrite {
			return syscall.EEXIST
		}
		switch {
		case de.IsDir && !se.IsDir:
			return syscall.EISDIR
		case !de.IsDir && se.IsDir:
			return syscall.ENOTDIR
		case de.IsDir:
			// POSIX replaces only an empty directory; the server would
			// replace a whole tree.
			kids, _, err := be.ListPage(ctx, dst, "", 1)
			if err != nil {
				return Errno(err)
			}
			if len(kids) > 0 {
				return syscall.ENOTEMPTY
			}
		}
	} else if Errno(err) != syscall.ENOENT {
		return Errno(err)
	}
	if errno := nd.preserveChild(ctx, newName); errno != 0 {
		return errno
	}
	if err := be.Rename(ctx, src, dst, overwrite); err != nil {
		return Errno(err)
	}
	if ch := nd.GetChild(newName); ch != nil {
		if n, ok := ch.Operations().(*fileNode); ok {
			n.markDeleted()
		}
	}
	// A rename changes the node's ctime (go-fuse moves the inode after).
	if ch := d.GetChild(name); ch != nil {
		now := d.fsys.o.Now()
		switch n := ch.Operations().(type) {
		case *fileNode:
			n.mu.Lock()
			n.changed = now
			n.mu.Unlock()
		case *dirNode:
			n.mu.Lock()
			n.changed = now
			n.mu.Unlock()
		case *symlinkNode:
			n.mu.Lock()
			n.changed = now
			n.mu.Unlock()
		}
	}
	se.Name = newName
	d.noteChild(name, nil)
	nd.noteChild(newName, &se)
	d.touch()
	nd.touch()
	return 0
}

func (d *dirNode) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	ctx, cancel := d.fsys.opCtx(ctx)
	defer cancel()
	q, err := d.fsys.o.Backend.Quota(ctx)
	d.fsys.quotaMu.Lock()
	if err == nil {
		d.fsys.lastQuota = &q
	} else if offline(err) && d.fsys.lastQuota != nil {
		q, err = *d.fsys.lastQuota, nil // as last seen, while the server is out of reach
	}
	d.fsys.quotaMu.Unlock()
	if err != nil {
		return Errno(err)
	}
	const bs = 4096
	total := q.Total
	if total <= 0 {
		// Unlimited: report a large, honest-looking figure rather than 0,
		// which tools read as "full".
		total = 1 << 50
	}
	// df's "used" is blocks - bfree: the user's files. Open uploads hold
	// their declared bytes against the quota, so they are left out of what
	// is available (bavail), like a filesystem's reserved blocks.
	free := max(total-q.Used, 0)
	avail := max(free-q.Uploading, 0)
	out.Bsize, out.Frsize = bs, bs
	out.Blocks = uint64(total / bs)
	out.Bfree = uint64(free / bs)
	out.Bavail = uint64(avail / bs)
	out.Files, out.Ffree = 1<<32, 1<<32
	out.NameLen = 255
	return 0
}
