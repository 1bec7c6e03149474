package dav

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"path"
	"strings"

	"golang.org/x/net/webdav"

	"netdisk/davlock"
	"netdisk/drive"
	"netdisk/errs"
	"netdisk/internal/redishealth"
	"netdisk/meta"
)

// Handler serves every user's drive under Prefix. Authentication happens
// before it: Serve is given the authenticated user.
//
// Requests x/net/webdav gets wrong or slow are answered here (GET/HEAD with
// sendfile, PUT that stages and commits); the rest go to webdav.Handler over
// an FS bound to the user.
type Handler struct {
	D      *drive.Drive
	Prefix string // e.g. "/dav"
	Log    *slog.Logger

	// Locks is the drive's lock table (davlock): the one every surface's
	// writes are checked against.
	Locks davlock.Table

	// SearchScan bounds the candidates one SEARCH evaluates; 0 means
	// MaxSearchScan.
	SearchScan int

	// link, when set, makes this a public link's handler (ForLink).
	link *drive.PublicLink
}

// NewHandler returns a Handler for the drive.
func NewHandler(d *drive.Drive, prefix string, log *slog.Logger) *Handler {
	if log == nil {
		log = slog.Default()
	}
	return &Handler{D: d, Prefix: strings.TrimSuffix(prefix, "/"), Log: log, Locks: d.Locks()}
}

// At returns the handler serving the same drives under another prefix: the
// Nextcloud and ownCloud clients' /remote.php/webdav and
// /remote.php/dav/files/USER. Hrefs, Destination headers and lock roots
// are read and written under that prefix; everything else is shared.
func (h *Handler) At(prefix string) *Handler {
	c := *h
	c.Prefix = strings.TrimSuffix(prefix, "/")
	return &c
}

// ForLink returns the handler serving public link pl's view under prefix
// (BASE/public.php/dav/files/TOKEN): a tree whose root "/" is the linked
// node. Every path a request names (its URL, Destination, the If header's
// tags) is read in that view and every href written in it, as under any
// prefix; the drive maps the view onto the owner's tree and decides what
// the link allows (drive.WithLink: a read link refuses writes, the root is
// never removed, moved or replaced, nothing outside is reachable). Writes
// are the owner's. On top of that the handler answers only the methods of
// files and folders (no LOCK, UNLOCK or SEARCH: the owner's lock table and
// search reach beyond the link; linkRefusal, which OPTIONS's Allow
// follows), shows no locks and no quota (the owner's, not the visitor's),
// serves every file as an attachment and counts a whole GET as one
// download, and answers errors by their status's text alone. Serve is then
// called with the link's owner.
func (h *Handler) ForLink(prefix string, pl drive.PublicLink) *Handler {
	c := h.At(prefix)
	c.link = &pl
	return c
}

// linkReads are the methods a link answers whatever its permission;
// linkWrites are those only a read-write link answers. Nothing else (LOCK,
// UNLOCK, SEARCH, POST) is answered through a link.
var (
	linkReads  = map[string]bool{http.MethodOptions: true, http.MethodGet: true, http.MethodHead: true, "PROPFIND": true}
	linkWrites = map[string]bool{http.MethodPut: true, http.MethodDelete: true, "MKCOL": true, "MOVE": true, "COPY": true, "PROPPATCH": true}
)

// rootRefused are the methods a link's root refuses whatever the link's
// permission: they would remove, move, replace or write the root
// (drive.WithLink refuses that too), or, for COPY, copy it into itself
// (every destination through the link lies inside its root).
var rootRefused = map[string]bool{http.MethodPut: true, http.MethodDelete: true, "MKCOL": true, "MOVE": true, "COPY": true, "PROPPATCH": true}

// linkRefusal is why a link of permission perm refuses method on view path
// name, or "" when it answers it. It is the one rule: Serve refuses by it
// and OPTIONS lists only what it lets through, so Allow cannot promise what
// is refused.
func linkRefusal(perm meta.LinkPerm, method, name string) string {
	switch {
	case perm != meta.LinkRead && perm != meta.LinkReadWrite:
		// A WebDAV client cannot work without listing, and a file drop
		// must never list.
		return "an upload-only link is not served over WebDAV"
	case linkReads[method]:
		return ""
	case !linkWrites[method]:
		return method + " is not served through a link"
	case perm == meta.LinkRead:
		return "this link is read-only"
	case rootRefused[method] && path.Clean(name) == "/":
		return "the link's root cannot be changed through it"
	}
	return ""
}

// lockName is the name of view path name in the lock table: through a
// link, the owner's path (the only locks there are the owner's).
func (h *Handler) lockName(name string) string {
	if h.link == nil {
		return name
	}
	root := h.link.Root.Path
	switch {
	case name == "/":
		return root
	case root == "/":
		return name
	}
	return root + name
}

// lockPlace is where view path name lies for the lock table: through a
// link, the owner's path under the link's root (shares do not chain through
// a link); otherwise the user's path, or the owner's when it is inside a
// share (FS.lockPlace).
func (h *Handler) lockPlace(ctx context.Context, fs *FS, name string) (drive.LockPlace, error) {
	if h.link != nil {
		return drive.LockPlace{UID: fs.UID, Path: h.lockName(name)}, nil
	}
	return fs.lockPlace(ctx, name)
}

// lockSystem is what x/net/webdav sees: our lock table (davlock) has already decided
// (confirmWrite) by the time a request reaches it.
func (h *Handler) lockSystem(uid int64) webdav.LockSystem { return confirmedLS{} }

// Serve answers one WebDAV request for user u.
func (h *Handler) Serve(w http.ResponseWriter, r *http.Request, u meta.User) {
	ProtectHeaders(w.Header()) // content.go: on every answer, errors and listings included
	fs := &FS{D: h.D, UID: u.ID, Name: u.Name}
	name, ok := strings.CutPrefix(r.URL.Path, h.Prefix)
	if !ok {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	if name == "" {
		name = "/"
	}
	if h.link != nil {
		if why := linkRefusal(h.link.Perm, r.Method, name); why != "" {
			http.Error(w, why, http.StatusForbidden)
			return
		}
		r = r.WithContext(drive.WithLink(r.Context(), *h.link))
	}
	if ih, has, err := requestIf(r); err == nil && has {
		// The drive checks every write against the lock table again, with
		// the tokens the request submitted (a malformed If header is
		// answered by confirmWrite).
		r = r.WithContext(davlock.WithTokens(r.Context(), ih.tokens()))
	}
	var status int
	var err error
	switch r.Method {
	case http.MethodPut, "MKCOL", "PROPPATCH":
		// Locks and If are ours to decide (locks.go); x/net/webdav must not
		// re-evaluate If with its own rules.
		if err := h.confirmWrite(r, fs, name); err != nil {
			h.finish(w, r, 0, err)
			return
		}
		r.Header.Del("If")
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		// Opened once: the one lookup a small file's GET makes
		// (drive.Open). A folder's listing, and the 404 of a missing
		// name, are x/net/webdav's.
		rd, oerr := fs.D.Open(r.Context(), fs.UID, name)
		if oerr == nil && h.link != nil {
			oerr = h.linkDownload(w, r, rd)
			if oerr != nil {
				rd.Close()
				err = oerr
				break
			}
		}
		if oerr == nil {
			status, err = h.serveFile(w, r, rd)
			break
		}
		if !errs.Is(oerr, errs.IsDir) && !errs.Is(oerr, errs.NotFound) {
			err = oerr
			break
		}
		h.webdav(fs).ServeHTTP(w, r)
		return
	case http.MethodPost:
		// x/net/webdav answers POST like GET, bypassing serveFile's
		// headers; WebDAV gives POST no meaning, and it is the one method
		// besides GET a cross-site form can send.
		w.Header().Set("Allow", "OPTIONS, GET, HEAD, PUT, DELETE, PROPFIND, PROPPATCH, MKCOL, COPY, MOVE, LOCK, UNLOCK, SEARCH")
		http.Error(w, "POST is not a WebDAV method", http.StatusMethodNotAllowed)
		return
	default:
		verb, ours := verbs[r.Method]
		if !ours {
			h.webdav(fs).ServeHTTP(w, r)
			return
		}
		status, err = verb(h, w, r, fs, name)
	}
	h.finish(w, r, status, err)
}

// verbs are the methods answered here rather than by x/net/webdav (GET and
// HEAD of a file apart: Serve picks them out). A verb returns the status
// to answer with, or 0 when it wrote the answer, and the error that
// decides it instead (finish).
var verbs = map[string]func(h *Handler, w http.ResponseWriter, r *http.Request, fs *FS, name string) (int, error){
	http.MethodPut:    (*Handler).put,
	http.MethodDelete: (*Handler).handleDelete,
	"LOCK":            (*Handler).handleLock,
	"UNLOCK":          (*Handler).handleUnlock,
	"PROPFIND":        (*Handler).propfind,
	"PROPPATCH":       (*Handler).proppatch,
	"COPY":            (*Handler).copyMove,
	"MOVE":            (*Handler).copyMove,
	"MKCOL":           (*Handler).mkcol,
	"SEARCH":          (*Handler).search,
	"OPTIONS":         (*Handler).options,
}

func (h *Handler) webdav(fs *FS) *webdav.Handler {
	return &webdav.Handler{Prefix: h.Prefix, FileSystem: fs, LockSystem: h.lockSystem(fs.UID),
		Logger: func(r *http.Request, err error) {
			if err != nil {
				h.Log.Debug("webdav", "method", r.Method, "path", r.URL.Path, "err", err)
			}
		}}
}

// finish writes status, or the error's status and one-line message.
func (h *Handler) finish(w http.ResponseWriter, r *http.Request, status int, err error) {
	if err != nil {
		status = Status(err)
		if status >= 500 {
			h.Log.Log(r.Context(), redishealth.Level(err, slog.LevelError), "webdav", "method", r.Method, "path", r.URL.Path, "err", err)
		}
		errs.SetErrorHeaders(w.Header(), status)
		msg := errs.Message(err)
		if errors.Is(err, drive.ErrNoLink) {
			msg = "no such link" // the answer a random token gets
		} else if h.link != nil {
			// An anonymous visitor: a message may name the owner's
			// folders (an error of the owner's tree as the store put it).
			msg = http.StatusText(status)
		}
		http.Error(w, msg, status)
		return
	}
	if status != 0 {
		w.WriteHeader(status)
	}
}

// Status maps an error kind to a WebDAV status: the API's (errs.HTTPStatus)
// but where RFC 4918 asks otherwise.
func Status(err error) int {
	if errors.Is(err, errSearchUnsupported) {
		// RFC 5323 §2.4: a well-formed query the server cannot answer
		// (another grammar, a property it does not search on).
		return http.StatusUnprocessableEntity
	}
	switch k := errs.KindOf(err); k {
	case errs.IsDir, errs.Exists:
		// A file method on a collection, or MKCOL on an existing
		// resource (RFC 4918 §9.3.1), is 405 Method Not Allowed.
		return http.StatusMethodNotAllowed
	default:
		return errs.HTTPStatus(k)
	}
}

// linkDownload prepares the GET or HEAD of a file through a link: always
// an attachment (the bytes are someone else's, served from the drive's
// own origin), and a GET of the whole file counts one download (a ranged
// one resumes a download counted already). drive.ErrNoLink when the
// link's downloads are used up meanwhile.
func (h *Handler) linkDownload(w http.ResponseWriter, r *http.Request, rd *drive.Reader) error {
	w.Header().Set("Content-Disposition", Attachment(rd.Node().Path))
	if r.Method != http.MethodGet || r.Header.Get("Range") != "" {
		return nil
	}
	return h.D.CountLinkDownload(r.Context(), h.link.Link)
}
