package dav

import (
	"errors"
	"log/slog"
	"net/http"
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
		http.Error(w, errs.Message(err), status)
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
