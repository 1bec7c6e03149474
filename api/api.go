// Package api is netdisk's HTTP JSON API under /api/v1: the upload protocol of
// shared/API.md, file operations for the client and mount, and admin calls.
// Handlers are thin: they decode, call the drive (or a service beside it) and
// encode; error kinds become statuses in one table (Status).
package api

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"netdisk/apitype"
	"netdisk/async"
	"netdisk/chunker"
	"netdisk/davlock"
	"netdisk/drive"
	"netdisk/errs"
	"netdisk/internal/redishealth"
	"netdisk/lock"
	"netdisk/meta"
	"netdisk/preview"
	"netdisk/upload"
)

// Version is reported by /api/v1/info; netdisk serve sets it from the
// binary's build information.
var Version = "dev"

// MaxJSONBody bounds every JSON request body.
const MaxJSONBody = 1 << 20

// Handler is an authenticated handler: the server has checked the credentials.
type Handler func(w http.ResponseWriter, r *http.Request, u meta.User)

// withService serves h when the optional service it needs runs on this
// server (running reports it, at each request); otherwise the request is
// answered Unavailable with why, before its body is read.
func (a *API) withService(running func() bool, op, why string, h Handler) Handler {
	return func(w http.ResponseWriter, r *http.Request, u meta.User) {
		if !running() {
			a.WriteError(w, r, errs.Errorf(op, errs.Unavailable, "%s", why))
			return
		}
		h(w, r, u)
	}
}

// serviceRoutes are the routes rs of an optional service, each served only
// while it runs (withService).
func (a *API) serviceRoutes(running func() bool, op, why string, rs []Route) []Route {
	for i := range rs {
		rs[i].Handler = a.withService(running, op, why, rs[i].Handler)
	}
	return rs
}

// Route is one endpoint.
type Route struct {
	Pattern string // net/http ServeMux pattern, e.g. "POST /api/v1/file/init"
	Handler Handler
	Admin   bool // only for admins
	Public  bool // no authentication (info)
}

// API holds what handlers need.
type API struct {
	D   *drive.Drive
	Log *slog.Logger
	// Upload runs the chunked upload sessions; nil answers those endpoints 503.
	Upload *upload.Service
	// Locks is the lock manager of /api/v1/lock/ (lockroutes.go); nil
	// answers those endpoints 503.
	Locks *lock.Manager
	// StreamsDone, closed at shutdown, ends the long-lived event streams.
	StreamsDone <-chan struct{}
	// StreamRecheck is how often a lock event stream re-reads its keys'
	// standing; 0 means DefaultLockStreamRecheck.
	StreamRecheck time.Duration
	// Async is the async download service of /api/v1/async/
	// (asyncroutes.go); nil answers those endpoints 503.
	Async *async.Service
	// AsyncRecheck is how often an agent's work stream re-reads its work;
	// 0 means DefaultAsyncRecheck.
	AsyncRecheck time.Duration
	// VerifyPassword, when set, checks the current password a password
	// change gives under the server's login throttle (a wrong one counts
	// as a failed sign-in, so a browser left signed in cannot be used to
	// guess it), answering the request itself when it is refused.
	VerifyPassword func(w http.ResponseWriter, r *http.Request, name, password string) bool
	// Previews makes and keeps thumbnails (thumbs.go); nil answers them 503.
	Previews *preview.Service
}

// New returns the API over a drive.
func New(d *drive.Drive, log *slog.Logger) *API {
	if log == nil {
		log = slog.Default()
	}
	return &API{D: d, Log: log}
}

// Routes lists every endpoint; each group lives in its own file.
func (a *API) Routes() []Route {
	rs := []Route{{Pattern: "GET /api/v1/info", Handler: a.info, Public: true}}
	rs = append(rs, a.adminRoutes()...)
	rs = append(rs, a.accountRoutes()...)
	rs = append(rs, a.fileRoutes()...)
	rs = append(rs, a.chunkRoutes()...)
	rs = append(rs, a.quotaRoutes()...)
	rs = append(rs, a.lockRoutes()...)
	rs = append(rs, a.asyncRoutes()...)
	rs = append(rs, a.searchRoutes()...)
	rs = append(rs, a.thumbRoutes()...)
	rs = append(rs, a.userShareRoutes()...)
	rs = append(rs, a.trashRoutes()...)
	rs = append(rs, a.linkRoutes()...)
	for i := range rs {
		rs[i].Handler = a.requireJSON(a.withLockTokens(rs[i].Handler))
	}
	return rs
}

// requireJSON answers a POST whose body is not declared JSON before the
// endpoint sees it (RequireJSON says why).
func (a *API) requireJSON(h Handler) Handler {
	return func(w http.ResponseWriter, r *http.Request, u meta.User) {
		if err := RequireJSON(r); err != nil {
			a.WriteError(w, r, err)
			return
		}
		h(w, r, u)
	}
}

// withLockTokens passes the WebDAV lock tokens a request submits (an If
// header "(<opaquelocktoken:…>)" or a Lock-Token header) to the drive in the
// request's context: a write to a locked resource without its token is 423,
// as over WebDAV, and the lock's owner can still use the API.
func (a *API) withLockTokens(h Handler) Handler {
	return func(w http.ResponseWriter, r *http.Request, u meta.User) {
		if r.Header.Get("If") != "" || r.Header.Get("Lock-Token") != "" {
			ts, err := davlock.HeaderTokens(r.Header)
			if err != nil {
				a.WriteError(w, r, err)
				return
			}
			r = r.WithContext(davlock.WithTokens(r.Context(), ts))
		}
		h(w, r, u)
	}
}

func (a *API) info(w http.ResponseWriter, _ *http.Request, _ meta.User) {
	WriteJSON(w, http.StatusOK, apitype.Info{ChunkSize: a.D.ChunkSize(), SmallFileLimit: chunker.SmallFileLimit, Version: Version})
}

// WriteJSON writes v with a status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// WriteError writes err as {"error": "...", "code": "..."} with the status
// of its kind; unexpected errors and a full disk are logged with their detail
// and shown with a fixed text (errs.Message).
func (a *API) WriteError(w http.ResponseWriter, r *http.Request, err error) {
	status := Status(err)
	if status >= 500 {
		a.Log.Log(r.Context(), redishealth.Level(err, slog.LevelError), "api", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	errs.SetErrorHeaders(w.Header(), status)
	WriteJSON(w, status, ErrorBody(err))
}

// ErrorBody is the error answer of err: its user-facing message and the
// code of its kind, and a quota refusal's exact figures.
func ErrorBody(err error) apitype.Error {
	body := apitype.Error{Error: errs.Message(err), Code: errs.Code(err)}
	if s := errs.ShortfallOf(err); s != nil {
		body.Free, body.Needed = &s.Free, &s.Need
	}
	return body
}

// ReadJSON decodes a JSON body of at most MaxJSONBody bytes into v. A body
// that is not one JSON value is Invalid; a longer one is TooLarge; one that
// could not be read keeps the kind requestBody gave it.
func ReadJSON(r *http.Request, v any) error {
	dec := json.NewDecoder(requestBody(r, MaxJSONBody, "the JSON body"))
	if err := dec.Decode(v); err != nil {
		if errs.Classified(err) {
			return err
		}
		return errs.E("api.ReadJSON", errs.Invalid, "", errors.New("bad JSON body: "+err.Error()))
	}
	if dec.More() {
		return errs.E("api.ReadJSON", errs.Invalid, "", errors.New("bad JSON body: trailing data"))
	}
	return nil
}

// Status maps an error kind to an HTTP status: errs.HTTPStatus, the table
// both HTTP edges share.
func Status(err error) int { return errs.HTTPStatus(errs.KindOf(err)) }
