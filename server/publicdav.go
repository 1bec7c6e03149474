package server

import (
	"context"
	"encoding/xml"
	"io/fs"
	"net/http"
	"os"
	"path"
	"strings"
	"sync"

	"golang.org/x/net/webdav"

	"netdisk/dav"
	"netdisk/drive"
	"netdisk/errs"
	"netdisk/meta"
)

// A public link over WebDAV, for rclone, davfs2 and the Nextcloud clients:
// BASE/public.php/dav/files/TOKEN/, Basic user the token (or none),
// password the link's (empty when it has none). The request is served by
// x/net/webdav over the owner's dav.FS seen through linkFS, which roots
// every name at the linked node: x/net/webdav cleans each name (and each
// Destination, which must also lie under this link's prefix) as an
// absolute path first, so "..", however encoded, stops at the link's root.
// A read link answers only reads (anything else 403); a read-write link
// also writes, as the owner (their quota, their trash); an upload-only
// link is not served over WebDAV (403: it must never list, and a WebDAV
// client cannot work without listing). The link's root itself cannot be
// deleted or moved through it.
const publicDAVPrefix = "/public.php/dav/files/"

func (s *Server) publicDAV(w http.ResponseWriter, r *http.Request) {
	publicHeaders(w, "")
	dav.ProtectHeaders(w.Header())
	token, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, publicDAVPrefix), "/")
	user, pass, hasAuth := r.BasicAuth()
	if hasAuth && user != token {
		s.davNoLink(w)
		return
	}
	pl, err := s.resolveToken(w, r, token)
	if err == errThrottled {
		return
	}
	if err != nil {
		if !errs.Is(err, errs.NotFound) {
			http.Error(w, "the drive cannot answer now", errs.HTTPStatus(errs.KindOf(err)))
			return
		}
		s.davNoLink(w)
		return
	}
	if pl.PassHash != "" && !s.davLinkPassword(w, r, pl, token, pass, hasAuth) {
		return
	}
	switch pl.Perm {
	case meta.LinkRead:
		switch r.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions, "PROPFIND":
		default:
			http.Error(w, "this link is read-only", http.StatusForbidden)
			return
		}
	case meta.LinkReadWrite:
		if r.Method == "LOCK" || r.Method == "UNLOCK" {
			http.Error(w, "locks are not taken through a link", http.StatusForbidden)
			return
		}
	default:
		http.Error(w, "an upload-only link is not served over WebDAV", http.StatusForbidden)
		return
	}
	prefix := publicDAVPrefix + token
	fs := linkFS{fs: &dav.FS{D: s.d, UID: pl.Owner.ID}, d: s.d, uid: pl.Owner.ID, root: pl.Root.Path, listed: &listing{}}
	if r.Method == http.MethodGet {
		name := strings.TrimPrefix(r.URL.Path, prefix)
		if fi, err := fs.Stat(r.Context(), name); err == nil && !fi.IsDir() {
			// Always an attachment: the bytes are someone else's, served
			// from the drive's own origin.
			w.Header().Set("Content-Disposition", dav.Attachment(fi.Name()))
			if r.Header.Get("Range") == "" {
				if err := s.d.CountLinkDownload(r.Context(), pl.Link); err != nil {
					s.davNoLink(w)
					return
				}
			}
		}
	}
	if r.Method == http.MethodPut {
		s.publicPut(w, r, pl, fs.name(strings.TrimPrefix(r.URL.Path, prefix)))
		return
	}
	h := &webdav.Handler{Prefix: prefix, FileSystem: fs, LockSystem: webdav.NewMemLS(),
		Logger: func(r *http.Request, err error) {
			if err != nil {
				s.log.Debug("public webdav", "method", r.Method, "err", err)
			}
		}}
	h.ServeHTTP(w, r)
}

// publicPut writes the body as a new version of the owner's file p (a
// path below the link's root), committed only once the whole body arrived,
// as the owner's own WebDAV PUT is (x/net/webdav's would answer a refusal
// met mid-body, such as the owner's quota, 405).
func (s *Server) publicPut(w http.ResponseWriter, r *http.Request, pl drive.PublicLink, p string) {
	size := r.ContentLength
	if p == pl.Root.Path {
		http.Error(w, "the link's root cannot be written", http.StatusForbidden)
		return
	}
	fw, err := s.d.Create(r.Context(), pl.Owner.ID, p, drive.WriteOptions{ExpectedSize: size})
	if err != nil {
		s.davError(w, err)
		return
	}
	n, err := fw.ReadFrom(r.Body)
	if err == nil && size >= 0 && n != size {
		err = errs.Errorf("server.publicPut", errs.Invalid, "body has %d bytes, %d announced", n, size)
	}
	if err != nil {
		fw.Abort()
		if !errs.Classified(err) {
			err = errs.E("server.publicPut", errs.Invalid, "", err)
		}
		s.davError(w, err)
		return
	}
	if _, err := fw.Commit(); err != nil {
		s.davError(w, err)
		return
	}
	if fw.Existed() {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	w.WriteHeader(http.StatusCreated)
}

// davError answers err by its kind, with the status's text only: the
// owner's paths stay out of an anonymous answer.
func (s *Server) davError(w http.ResponseWriter, err error) {
	status := dav.Status(err)
	if status >= 500 && status != http.StatusInsufficientStorage {
		s.log.Warn("public webdav", "err", err)
	}
	http.Error(w, http.StatusText(status), status)
}

// davNoLink is the one answer for a token that reaches nothing.
func (s *Server) davNoLink(w http.ResponseWriter) {
	http.Error(w, "no such link", http.StatusNotFound)
}

// davLinkPassword checks a password link's Basic password, throttled per
// link and address as the page's form is.
func (s *Server) davLinkPassword(w http.ResponseWriter, r *http.Request, pl drive.PublicLink, token, pass string, hasAuth bool) bool {
	deny := func(status int) {
		w.Header().Set("WWW-Authenticate", `Basic realm="netdisk link", charset="UTF-8"`)
		http.Error(w, "this link needs its password", status)
	}
	if !hasAuth {
		deny(http.StatusUnauthorized)
		return false
	}
	ip, account := clientIP(r), "\x00link "+token
	if _, ok, _ := s.logins.admit(account, ip, true); !ok {
		deny(http.StatusTooManyRequests)
		return false
	}
	if !drive.LinkPasswordOK(pl.Link, pass) {
		s.logins.done(account, ip, true, false)
		s.log.Info("public link: wrong password", "addr", ip)
		deny(http.StatusUnauthorized)
		return false
	}
	s.logins.done(account, ip, false, false) // a right password clears nothing: the pair is not a person
	return true
}

// linkFS is the owner's tree seen from the linked node: name "/" is the
// node, everything else below it. It is made for one request.
//
// x/net/webdav answers a Depth 1 PROPFIND by opening each child it listed
// and asking its dead properties: four queries a child, where the owner's
// own PROPFIND (dav/propfind.go) makes two for the whole folder. So a
// folder read here keeps its children and their properties, read in one
// batch, and a file among them opened read-only in the same request is
// answered from them.
type linkFS struct {
	fs     webdav.FileSystem
	d      *drive.Drive
	uid    int64
	root   string
	listed *listing
}

type listing struct {
	mu    sync.Mutex
	nodes map[string]meta.Node // owner path → a file listed by the folder read
	props map[int64][]meta.Prop
}

func (l linkFS) name(n string) string { return path.Join(l.root, path.Clean("/"+n)) }

func isRoot(n string) bool { return path.Clean("/"+n) == "/" }

func (l linkFS) Mkdir(ctx context.Context, n string, perm os.FileMode) error {
	return l.fs.Mkdir(ctx, l.name(n), perm)
}

func (l linkFS) OpenFile(ctx context.Context, n string, flag int, perm os.FileMode) (webdav.File, error) {
	full := l.name(n)
	if flag == os.O_RDONLY {
		l.listed.mu.Lock()
		node, ok := l.listed.nodes[full]
		ps := l.listed.props[node.ID]
		l.listed.mu.Unlock()
		if ok {
			return &listedFile{node: node, props: ps}, nil
		}
	}
	f, err := l.fs.OpenFile(ctx, full, flag, perm)
	if err != nil || flag != os.O_RDONLY {
		return f, err
	}
	if fi, err := f.Stat(); err == nil && fi.IsDir() {
		return &listingDir{File: f, l: l, ctx: ctx, path: full}, nil
	}
	return f, nil
}

func (l linkFS) RemoveAll(ctx context.Context, n string) error {
	if isRoot(n) {
		return os.ErrPermission
	}
	return l.fs.RemoveAll(ctx, l.name(n))
}

func (l linkFS) Rename(ctx context.Context, from, to string) error {
	if isRoot(from) || isRoot(to) {
		return os.ErrPermission
	}
	return l.fs.Rename(ctx, l.name(from), l.name(to))
}

func (l linkFS) Stat(ctx context.Context, n string) (os.FileInfo, error) {
	return l.fs.Stat(ctx, l.name(n))
}

// listingDir is a folder whose Readdir keeps its files, and their dead
// properties read in one batch, for the rest of the request.
type listingDir struct {
	webdav.File
	l    linkFS
	ctx  context.Context
	path string
}

func (d *listingDir) Readdir(count int) ([]fs.FileInfo, error) {
	fis, err := d.File.Readdir(count)
	if err != nil || len(fis) == 0 {
		return fis, err
	}
	ps, err := d.l.d.PropsUnder(d.ctx, d.l.uid, d.path, false)
	if err != nil {
		return fis, nil // the children are then opened one by one, as without
	}
	d.l.listed.mu.Lock()
	defer d.l.listed.mu.Unlock()
	if d.l.listed.nodes == nil {
		d.l.listed.nodes = make(map[string]meta.Node, len(fis))
	}
	d.l.listed.props = ps
	for _, fi := range fis {
		if n, ok := fi.Sys().(meta.Node); ok && !n.IsDir {
			d.l.listed.nodes[n.Path] = n
		}
	}
	return fis, nil
}

func (d *listingDir) DeadProps() (map[xml.Name]webdav.Property, error) {
	if h, ok := d.File.(webdav.DeadPropsHolder); ok {
		return h.DeadProps()
	}
	return nil, nil
}

func (d *listingDir) Patch(p []webdav.Proppatch) ([]webdav.Propstat, error) {
	if h, ok := d.File.(webdav.DeadPropsHolder); ok {
		return h.Patch(p)
	}
	return nil, os.ErrPermission
}

// listedFile is a file a folder read listed: its stat and dead properties
// as read then, nothing else (it is opened read-only only by PROPFIND).
type listedFile struct {
	node  meta.Node
	props []meta.Prop
}

var _ webdav.DeadPropsHolder = (*listedFile)(nil)

func (f *listedFile) Close() error                       { return nil }
func (f *listedFile) Read([]byte) (int, error)           { return 0, os.ErrInvalid }
func (f *listedFile) Write([]byte) (int, error)          { return 0, os.ErrPermission }
func (f *listedFile) Seek(int64, int) (int64, error)     { return 0, os.ErrInvalid }
func (f *listedFile) Readdir(int) ([]fs.FileInfo, error) { return nil, os.ErrInvalid }
func (f *listedFile) Stat() (fs.FileInfo, error)         { return dav.FileInfo{N: f.node}, nil }
func (f *listedFile) Patch([]webdav.Proppatch) ([]webdav.Propstat, error) {
	return nil, os.ErrPermission
}

func (f *listedFile) DeadProps() (map[xml.Name]webdav.Property, error) {
	out := make(map[xml.Name]webdav.Property, len(f.props))
	for _, q := range f.props {
		n := xml.Name{Space: q.Space, Local: q.Local}
		out[n] = webdav.Property{XMLName: n, Lang: q.Lang, InnerXML: []byte(q.InnerXML)}
	}
	return out, nil
}
