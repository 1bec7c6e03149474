// Package dav is netdisk's WebDAV server (RFC 4918, class 1 and 2) over the
// drive core, for one authenticated user per request.
//
// It answers the verbs itself: GET/HEAD of a file, PUT, DELETE, PROPFIND,
// PROPPATCH, COPY/MOVE, MKCOL, LOCK and UNLOCK, OPTIONS, SEARCH (RFC 5323
// basicsearch, which x/net/webdav lacks), and the If header. Only what it
// does not need to change (GET of a folder) goes on to
// golang.org/x/net/webdav, over FS, a webdav.FileSystem bound to the user.
// It answers them itself because x/net/webdav cannot do what the drive
// needs: a file's GET is served with sendfile from the chunk store (not
// copied through a webdav.File); PUT streams the body into a new version
// committed only once all of it arrived; a PROPFIND of a folder reads all its children and their dead
// properties in one batch (x/net/webdav asks per child, one query each);
// and locks are the drive's one table (davlock), which the HTTP API and the
// mount check as well, where x/net/webdav keeps a lock table of its own
// that no other surface sees.
//
// It holds no business rules: it translates between WebDAV and drive
// calls, and error kinds to WebDAV statuses.
package dav

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"os"
	"path"
	"strconv"
	"time"

	"golang.org/x/net/webdav"

	"netdisk/drive"
	"netdisk/errs"
	"netdisk/meta"
)

// FS is one user's drive as a webdav.FileSystem.
type FS struct {
	D   *drive.Drive
	UID int64
	// Name is the user's name: a SEARCH scope may name the user's tree by it
	// (/files/NAME/…, as the Nextcloud clients send).
	Name string

	// places maps the user's paths onto the lock table (lockPlace), read
	// at the request's first use.
	places *drive.LockPlaces
}

// lockPlace is where name, a clean path of the user's, lies for the lock
// table: a path inside a share is the owner's resource (drive.LockPlace).
func (f *FS) lockPlace(ctx context.Context, name string) (drive.LockPlace, error) {
	ps, err := f.placesOf(ctx)
	if err != nil {
		return drive.LockPlace{}, err
	}
	return ps.Of(name), nil
}

// placesOf reads the user's lock places once per request.
func (f *FS) placesOf(ctx context.Context) (*drive.LockPlaces, error) {
	if f.places == nil {
		ps, err := f.D.LockPlaces(ctx, f.UID)
		if err != nil {
			return nil, err
		}
		f.places = &ps
	}
	return f.places, nil
}

var _ webdav.FileSystem = (*FS)(nil)

// toOS maps error kinds to the os errors x/net/webdav turns into statuses
// (ErrNotExist → 404/409, ErrExist → 405, ErrPermission → 403).
func toOS(op, name string, err error) error {
	if err == nil {
		return nil
	}
	var target error
	switch errs.KindOf(err) {
	case errs.NotFound, errs.NoParent, errs.NotDir:
		target = fs.ErrNotExist
	case errs.Exists:
		target = fs.ErrExist
	case errs.Permission, errs.Invalid, errs.ReadOnly:
		target = fs.ErrPermission
	default:
		return err
	}
	// Err must be the bare sentinel: x/net/webdav tests with os.IsNotExist,
	// which does not look through wrapped or joined errors (a joined error
	// turned MKCOL without parent into 405 instead of 409).
	return &fs.PathError{Op: op + " (" + errs.Message(err) + ")", Path: name, Err: target}
}

// Mkdir creates a collection.
func (f *FS) Mkdir(ctx context.Context, name string, _ os.FileMode) error {
	_, err := f.D.Mkdir(ctx, f.UID, name)
	return toOS("mkdir", name, err)
}

// OpenFile opens a file or directory. Truncating or creating opens a staging
// writer whose Close commits atomically: x/net/webdav would otherwise truncate
// the live file and copy into it in place.
func (f *FS) OpenFile(ctx context.Context, name string, flag int, _ os.FileMode) (webdav.File, error) {
	n, err := f.D.Stat(ctx, f.UID, name)
	create := flag&os.O_TRUNC != 0 || (flag&os.O_CREATE != 0 && errs.Is(err, errs.NotFound))
	if create {
		if err == nil && flag&os.O_EXCL != 0 {
			return nil, toOS("open", name, errs.E("dav.OpenFile", errs.Exists, name, nil))
		}
		w, err := f.D.Create(ctx, f.UID, name, drive.WriteOptions{ExpectedSize: -1})
		if err != nil {
			return nil, toOS("open", name, err)
		}
		return &writeFile{fs: f, ctx: ctx, w: w}, nil
	}
	if err != nil {
		return nil, toOS("open", name, err)
	}
	if n.IsDir {
		return &dirFile{fs: f, ctx: ctx, node: n}, nil
	}
	r, err := f.D.Open(ctx, f.UID, name)
	if err != nil {
		return nil, toOS("open", name, err)
	}
	return &readFile{fs: f, ctx: ctx, Reader: r}, nil
}

// RemoveAll removes name and its subtree; a missing name is success, as
// webdav.FileSystem documents.
func (f *FS) RemoveAll(ctx context.Context, name string) error {
	err := f.D.Remove(ctx, f.UID, name)
	if errs.Is(err, errs.NotFound) {
		return nil
	}
	return toOS("remove", name, err)
}

// Rename moves a node; x/net/webdav has already removed an overwritten target.
func (f *FS) Rename(ctx context.Context, oldName, newName string) error {
	return toOS("rename", oldName, f.D.Move(ctx, f.UID, oldName, newName, false))
}

// Stat returns a node's FileInfo.
func (f *FS) Stat(ctx context.Context, name string) (os.FileInfo, error) {
	n, err := f.D.Stat(ctx, f.UID, name)
	if err != nil {
		return nil, toOS("stat", name, err)
	}
	return FileInfo{n}, nil
}

// FileInfo is a node as os.FileInfo, with the ETag and content type
// x/net/webdav would otherwise compute by reading the file.
type FileInfo struct{ N meta.Node }

var (
	_ webdav.ETager       = FileInfo{}
	_ webdav.ContentTyper = FileInfo{}
)

func (i FileInfo) Name() string       { return path.Base(i.N.Path) }
func (i FileInfo) Size() int64        { return i.N.Size }
func (i FileInfo) ModTime() time.Time { return i.N.ModTime }
func (i FileInfo) IsDir() bool        { return i.N.IsDir }
func (i FileInfo) Sys() any           { return i.N }

// Mode returns the stored permission bits, with defaults for nodes that have none.
func (i FileInfo) Mode() fs.FileMode {
	m := fs.FileMode(i.N.Mode & 0o7777)
	if i.N.IsDir {
		if m == 0 {
			m = 0o755
		}
		return m | fs.ModeDir
	}
	if m == 0 {
		m = 0o644
	}
	return m
}

// ETag is the file hash for files (content identity, so equal content has an
// equal tag) and id, mtime and tree sequence for directories.
func (i FileInfo) ETag(context.Context) (string, error) { return ETag(i.N), nil }

// ETag returns the entity tag of a node, quoted.
func ETag(n meta.Node) string {
	if n.IsSymlink() {
		// A link's content is its target, which never changes in place.
		sum := md5.Sum([]byte(n.Target))
		return `"l` + hex.EncodeToString(sum[:]) + `"`
	}
	if n.IsDir {
		// TreeSeq: a change at any depth below changes the folder's tag
		// (sync clients walk only folders whose tag changed).
		return `"d` + strconv.FormatInt(n.ID, 36) + "-" + strconv.FormatInt(n.ModTime.UnixNano(), 36) + "-" + strconv.FormatInt(n.TreeSeq, 36) + `"`
	}
	return `"` + n.FileHash + `"`
}

// ContentType guesses from the extension only: PROPFIND must never read content.
func (i FileInfo) ContentType(context.Context) (string, error) { return NodeContentType(i.N), nil }

// SymlinkType is the media type a symbolic link is served with: the one
// freedesktop.org's shared-mime-info gives links (GNOME's and KDE's file
// managers know it), so a client that does not know the marker property
// still sees the body is not the content of a file.
const SymlinkType = "inode/symlink"

// NodeContentType is n's media type: SymlinkType for a link, else by the
// name's extension.
func NodeContentType(n meta.Node) string {
	if n.IsSymlink() {
		return SymlinkType
	}
	return ContentType(n.Path)
}

// ContentType returns the MIME type for a file name by its extension.
func ContentType(name string) string {
	if t := mime.TypeByExtension(path.Ext(name)); t != "" {
		return t
	}
	return "application/octet-stream"
}

// props implements webdav.DeadPropsHolder for any node.
type props struct {
	fs   *FS
	ctx  context.Context
	path func() string
}

func (p props) DeadProps() (map[xml.Name]webdav.Property, error) {
	ps, err := p.fs.D.Props(p.ctx, p.fs.UID, p.path())
	if err != nil {
		return nil, toOS("propfind", p.path(), err)
	}
	out := make(map[xml.Name]webdav.Property, len(ps))
	for _, q := range ps {
		n := xml.Name{Space: q.Space, Local: q.Local}
		out[n] = webdav.Property{XMLName: n, Lang: q.Lang, InnerXML: []byte(q.InnerXML)}
	}
	return out, nil
}

// Patch applies a PROPPATCH. Instructions apply in document order (a set then
// a remove of the same property leaves it removed): only the last instruction
// per property matters, so the net sets and removes are disjoint and the
// store may apply them in any order, in one transaction.
func (p props) Patch(patches []webdav.Proppatch) ([]webdav.Propstat, error) {
	type op struct {
		remove bool
		prop   meta.Prop
	}
	last := map[xml.Name]op{}
	var order []xml.Name
	st := webdav.Propstat{Status: 200}
	for _, pp := range patches {
		for _, q := range pp.Props {
			if _, seen := last[q.XMLName]; !seen {
				order = append(order, q.XMLName)
			}
			last[q.XMLName] = op{pp.Remove, meta.Prop{Space: q.XMLName.Space, Local: q.XMLName.Local, Lang: q.Lang, InnerXML: string(q.InnerXML)}}
			st.Props = append(st.Props, webdav.Property{XMLName: q.XMLName})
		}
	}
	if protected := protectedPatch(order); protected != nil {
		return protected, nil
	}
	var set, remove []meta.Prop
	for _, n := range order {
		if o := last[n]; o.remove {
			remove = append(remove, o.prop)
		} else {
			set = append(set, o.prop)
		}
	}
	if err := p.fs.D.PatchProps(p.ctx, p.fs.UID, p.path(), set, remove); err != nil {
		if refused := refusedPatch(err, set, remove); refused != nil {
			return refused, nil
		}
		if errs.Is(err, errs.ReadOnly) {
			// A read-only share: every property refused (RFC 4918 §9.2).
			st.Status, st.ResponseDescription = http.StatusForbidden, errs.Message(err)
			return []webdav.Propstat{st}, nil
		}
		return nil, toOS("proppatch", p.path(), err)
	}
	return []webdav.Propstat{st}, nil
}

// refusedPatch answers a patch the drive would not store for lack of room
// (a property or a node's properties over their bounds, the user's quota,
// the server's disk) as RFC 4918 §9.2.1 says: 507 Insufficient Storage for
// the properties that asked for room, 424 Failed Dependency for the rest
// (the patch is all or nothing), each with the reason. nil for any other
// error.
// protectedPatch refuses a PROPPATCH naming nd:symlink (a link's target is
// set by creating the link, never by a property): 403 for it, 424 for the
// rest, nothing applied (RFC 4918 §9.2); nil when the patch is free of it.
func protectedPatch(names []xml.Name) []webdav.Propstat {
	bad := webdav.Propstat{Status: http.StatusForbidden, XMLError: "<D:cannot-modify-protected-property/>"}
	dep := webdav.Propstat{Status: http.StatusFailedDependency}
	for _, n := range names {
		if isNDSymlink(n) {
			bad.Props = append(bad.Props, webdav.Property{XMLName: n})
		} else {
			dep.Props = append(dep.Props, webdav.Property{XMLName: n})
		}
	}
	switch {
	case len(bad.Props) == 0:
		return nil
	case len(dep.Props) == 0:
		return []webdav.Propstat{bad}
	}
	return []webdav.Propstat{bad, dep}
}

func refusedPatch(err error, set, remove []meta.Prop) []webdav.Propstat {
	switch errs.KindOf(err) {
	case errs.TooLarge, errs.Quota, errs.NoSpace:
	default:
		return nil
	}
	why := errs.Message(err)
	full := webdav.Propstat{Status: http.StatusInsufficientStorage, ResponseDescription: why}
	for _, q := range set {
		full.Props = append(full.Props, webdav.Property{XMLName: xml.Name{Space: q.Space, Local: q.Local}})
	}
	out := []webdav.Propstat{full}
	if len(remove) > 0 {
		dep := webdav.Propstat{Status: http.StatusFailedDependency, ResponseDescription: "not removed: " + why}
		for _, q := range remove {
			dep.Props = append(dep.Props, webdav.Property{XMLName: xml.Name{Space: q.Space, Local: q.Local}})
		}
		out = append(out, dep)
	}
	return out
}

type dirFile struct {
	fs   *FS
	ctx  context.Context
	node meta.Node
	read bool
}

var _ webdav.DeadPropsHolder = (*dirFile)(nil)

func (d *dirFile) Close() error { return nil }
func (d *dirFile) Read([]byte) (int, error) {
	return 0, toOS("read", d.node.Path, errs.E("dav.Read", errs.IsDir, d.node.Path, nil))
}
func (d *dirFile) Write([]byte) (int, error) {
	return 0, toOS("write", d.node.Path, errs.E("dav.Write", errs.IsDir, d.node.Path, nil))
}
func (d *dirFile) Seek(int64, int) (int64, error)                        { return 0, nil }
func (d *dirFile) Stat() (fs.FileInfo, error)                            { return FileInfo{d.node}, nil }
func (d *dirFile) props() props                                          { return props{d.fs, d.ctx, func() string { return d.node.Path }} }
func (d *dirFile) DeadProps() (map[xml.Name]webdav.Property, error)      { return d.props().DeadProps() }
func (d *dirFile) Patch(p []webdav.Proppatch) ([]webdav.Propstat, error) { return d.props().Patch(p) }

// Readdir returns every child at once (count <= 0) or nothing more after the
// first call, which is all x/net/webdav asks of it.
func (d *dirFile) Readdir(count int) ([]fs.FileInfo, error) {
	if d.read {
		if count > 0 {
			return nil, io.EOF
		}
		return nil, nil
	}
	d.read = true
	ns, err := d.fs.D.List(d.ctx, d.fs.UID, d.node.Path)
	if err != nil {
		return nil, toOS("readdir", d.node.Path, err)
	}
	out := make([]fs.FileInfo, len(ns))
	for i, n := range ns {
		out[i] = FileInfo{n}
	}
	return out, nil
}

type readFile struct {
	fs  *FS
	ctx context.Context
	*drive.Reader
}

var _ webdav.DeadPropsHolder = (*readFile)(nil)

func (r *readFile) Write([]byte) (int, error) {
	return 0, toOS("write", r.Node().Path, errs.E("dav.Write", errs.Permission, r.Node().Path, errors.New("opened read-only")))
}
func (r *readFile) Readdir(int) ([]fs.FileInfo, error) {
	return nil, toOS("readdir", r.Node().Path, errs.E("dav.Readdir", errs.NotDir, r.Node().Path, nil))
}
func (r *readFile) Stat() (fs.FileInfo, error)                            { return FileInfo{r.Node()}, nil }
func (r *readFile) props() props                                          { return props{r.fs, r.ctx, func() string { return r.Node().Path }} }
func (r *readFile) DeadProps() (map[xml.Name]webdav.Property, error)      { return r.props().DeadProps() }
func (r *readFile) Patch(p []webdav.Proppatch) ([]webdav.Propstat, error) { return r.props().Patch(p) }

// writeFile stages a new version; Close commits it.
type writeFile struct {
	fs     *FS
	ctx    context.Context
	w      *drive.Writer
	node   meta.Node
	closed bool
	err    error
}

func (w *writeFile) Write(p []byte) (int, error) { return w.w.Write(p) }
func (w *writeFile) Read([]byte) (int, error) {
	return 0, toOS("read", w.w.Path(), errs.E("dav.Read", errs.Permission, w.w.Path(), errors.New("opened for writing")))
}
func (w *writeFile) Seek(off int64, whence int) (int64, error) {
	if off == 0 && (whence == io.SeekCurrent || whence == io.SeekEnd) {
		return w.w.Size(), nil
	}
	return 0, toOS("seek", w.w.Path(), errs.E("dav.Seek", errs.Invalid, w.w.Path(), errors.New("staged writes are sequential")))
}
func (w *writeFile) Readdir(int) ([]fs.FileInfo, error) {
	return nil, toOS("readdir", w.w.Path(), errs.E("dav.Readdir", errs.NotDir, w.w.Path(), nil))
}

// Stat reports the committed node after Close (x/net/webdav asks for the ETag
// then), the staged size before.
func (w *writeFile) Stat() (fs.FileInfo, error) {
	if w.closed {
		return FileInfo{w.node}, w.err
	}
	return FileInfo{meta.Node{Path: w.w.Path(), Size: w.w.Size(), ModTime: time.Now()}}, nil
}

func (w *writeFile) Close() error {
	if w.closed {
		return w.err
	}
	w.closed = true
	w.node, w.err = w.w.Commit()
	w.err = toOS("close", w.w.Path(), w.err)
	return w.err
}
