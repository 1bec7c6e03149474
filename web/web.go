// Package web is netdisk's browser interface: the page and its assets
// (embedded, so the binary is the whole set-up), cookie sessions for the
// page, and the folder download as a zip stream. The page itself talks to
// the JSON API (/api/v1/…) and downloads through /dav/, authenticated by the
// session cookie; server wires both (server/web.go).
//
// Authentication by cookie:
//   - POST /web/login {"name", "password"} checks the password through the
//     server's throttled login (the same limits as Basic auth) and sets the
//     session cookie: HttpOnly, SameSite=Strict, Path=/, Secure when the
//     request came over TLS (r.TLS, or X-Forwarded-Proto: https, which
//     server keeps only from trusted proxies).
//   - Every state-changing request made with the cookie (any method but GET,
//     HEAD, OPTIONS) must carry X-CSRF-Token equal to the session's token,
//     which only a same-origin page can read (GET /web/session). SameSite=Strict
//     already keeps the cookie off cross-site requests; the token is the
//     second lock. Login itself demands a JSON body (a cross-site form cannot
//     send one without a preflight) and a same-origin Origin when present.
//   - A request with Basic credentials is judged by them only: the cookie is
//     ignored, so /dav/ and /api/ clients see no change.
//
// The page also hosts the grant screen of Nextcloud's Login Flow v2
// (loginflow.go), through which the Nextcloud and ownCloud apps get an app
// token of their own.
package web

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"io"
	"io/fs"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	"netdisk/apitype"
	"netdisk/drive"
	"netdisk/errs"
	"netdisk/meta"
)

//go:embed static
var static embed.FS

// CookieName is the session cookie.
const CookieName = "netdisk_session"

// CSRFHeader carries the session's CSRF token.
const CSRFHeader = "X-CSRF-Token"

// PageHeader marks the page's own requests: a 401 to them never carries
// WWW-Authenticate (which would make the browser pop its password dialog).
const PageHeader = "X-Netdisk-Web"

// LoginFunc checks a name and password with the server's throttling. On
// failure it has answered the request itself (401, 429 with Retry-After, 503).
type LoginFunc func(w http.ResponseWriter, r *http.Request, name, password string) (meta.User, bool)

// Config wires a Handler.
type Config struct {
	Drive    *drive.Drive
	Sessions *Sessions
	Login    LoginFunc
	Logger   *slog.Logger
}

// Handler serves the page, its assets, sessions and zip downloads.
type Handler struct {
	d        *drive.Drive
	sessions *Sessions
	login    LoginFunc
	log      *slog.Logger
	assets   map[string]asset
	flows    *LoginFlows // Login Flow v2 (loginflow.go)
}

type asset struct {
	body  []byte
	ctype string
	etag  string
}

// New builds the handler; the assets are read from the binary once.
func New(c Config) *Handler {
	h := &Handler{d: c.Drive, sessions: c.Sessions, login: c.Login, log: c.Logger, assets: map[string]asset{}}
	if h.log == nil {
		h.log = slog.Default()
	}
	h.flows = NewLoginFlows(c.Drive.LoginFlows(), c.Sessions.Now)
	fs.WalkDir(static, "static", func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		b, err := static.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		ct := mime.TypeByExtension(path.Ext(p))
		switch path.Ext(p) { // do not depend on the host's mime.types for what the page needs
		case ".js":
			ct = "text/javascript; charset=utf-8"
		case ".css":
			ct = "text/css; charset=utf-8"
		case ".html":
			ct = "text/html; charset=utf-8"
		case ".svg":
			ct = "image/svg+xml"
		case ".md", ".LICENSE":
			ct = "text/plain; charset=utf-8"
		}
		if ct == "" {
			ct = "application/octet-stream"
		}
		h.assets["/"+strings.TrimPrefix(p, "static/")] = asset{body: b, ctype: ct, etag: `"` + hex.EncodeToString(sum[:12]) + `"`}
		return nil
	})
	return h
}

// LoginFlows are the handler's pending Login Flow v2 sign-ins.
func (h *Handler) LoginFlows() *LoginFlows { return h.flows }

// Sessions is the handler's session store.
func (h *Handler) Sessions() *Sessions { return h.sessions }

// Route is one pattern the server mounts.
type Route struct {
	Pattern string
	Handler http.HandlerFunc
}

// Routes are the page's own endpoints; server mounts them. Zip needs a user
// and is wrapped by server's authentication (cookie or Basic).
func (h *Handler) Routes() []Route {
	return []Route{
		{"GET /{$}", h.serveIndex},
		{"GET /static/", h.serveAsset},
		{"POST /web/login", h.serveLogin},
		{"POST /web/logout", h.serveLogout},
		{"GET /web/session", h.serveSession},
		// Login Flow v2 (loginflow.go), under the paths the Nextcloud
		// clients use, with and without index.php.
		{"POST /index.php/login/v2", h.serveFlowStart},
		{"POST /login/v2", h.serveFlowStart},
		{"POST /index.php/login/v2/poll", h.servePoll},
		{"POST /login/v2/poll", h.servePoll},
		{"GET /index.php/login/v2/flow/{token}", h.serveGrantPage},
		{"GET /login/v2/flow/{token}", h.serveGrantPage},
		{"GET /web/loginflow/{token}", h.serveFlowInfo},
		{"POST /web/loginflow/{token}/grant", h.serveFlowGrant},
	}
}

// securityHeaders: the page loads nothing from elsewhere, is never framed,
// and previews of user files (blob: URLs, /dav/) are the only images.
func securityHeaders(w http.ResponseWriter) {
	w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' blob: data:; media-src 'self' blob:; worker-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Referrer-Policy", "same-origin")
	w.Header().Set("X-Frame-Options", "DENY")
}

func (h *Handler) serveIndex(w http.ResponseWriter, r *http.Request) {
	h.writeAsset(w, r, "/index.html")
}

func (h *Handler) serveAsset(w http.ResponseWriter, r *http.Request) {
	h.writeAsset(w, r, strings.TrimPrefix(r.URL.Path, "/static"))
}

// writeAsset serves an embedded file. Caching: every answer carries an ETag
// (a hash of the content) and Cache-Control: no-cache, so the browser keeps
// its copy and revalidates it with one cheap 304 — a new binary's page is
// never mixed with an old cached worker, and no build step has to fingerprint
// file names.
func (h *Handler) writeAsset(w http.ResponseWriter, r *http.Request, name string) {
	a, ok := h.assets[name]
	if !ok {
		http.NotFound(w, r)
		return
	}
	securityHeaders(w)
	w.Header().Set("Content-Type", a.ctype)
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("ETag", a.etag)
	if inm := r.Header.Get("If-None-Match"); inm != "" && strings.Contains(inm, a.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Header().Set("Content-Length", itoa(int64(len(a.body))))
	if r.Method == http.MethodHead {
		return
	}
	w.Write(a.body)
}

// Secure reports whether the request reached us over TLS, directly or
// through a proxy that says so (server drops X-Forwarded-Proto from peers
// that are not trusted proxies, so only theirs is read here).
func Secure(r *http.Request) bool {
	return r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// WriteError answers err as an API-shaped error: its status from the errs
// table (errs.HTTPStatus), its code and message from errs, as the JSON API
// answers it. No WWW-Authenticate: a browser would pop its own password
// dialog over the page.
func WriteError(w http.ResponseWriter, err error) {
	writeError(w, errs.HTTPStatus(errs.KindOf(err)), err)
}

func writeError(w http.ResponseWriter, status int, err error) {
	errs.SetErrorHeaders(w.Header(), status)
	writeJSON(w, status, apitype.Error{Error: errs.Message(err), Code: errs.Code(err)})
}

// The web edge's own refusals, in the errs table's kinds.
var (
	errNotJSON     = errs.Errorf("web.login", errs.Invalid, "sign-in expects a JSON body")
	errCrossSite   = errs.Errorf("web.login", errs.Permission, "cross-site sign-in refused")
	errNoPassword  = errs.Errorf("web.login", errs.Invalid, "user name and password required")
	errCSRF        = errs.Errorf("web", errs.Permission, "missing or wrong CSRF token")
	errNotSignedIn = errs.Errorf("web.session", errs.Unauthenticated, "not signed in")
	// ErrSessionEnded answers a request whose session cookie names no
	// session (expired, signed out, its user deleted).
	ErrSessionEnded = errs.Errorf("web", errs.Unauthenticated, "your session has ended: sign in again")
)

type sessionBody struct {
	Name    string `json:"name"`
	IsAdmin bool   `json:"isAdmin"`
	CSRF    string `json:"csrf"`
}

// sameOrigin refuses a request whose Origin (sent by browsers on POST) is
// another site. Without Origin (not a browser) the JSON-only rule suffices.
func sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	u, err := url.Parse(o)
	return err == nil && u.Host == r.Host
}

func (h *Handler) serveLogin(w http.ResponseWriter, r *http.Request) {
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		// 415, not Invalid's 400: the request is well formed, in a media
		// type this endpoint does not take (RFC 9110 §15.5.16).
		writeError(w, http.StatusUnsupportedMediaType, errNotJSON)
		return
	}
	if !sameOrigin(r) {
		WriteError(w, errCrossSite)
		return
	}
	var body struct {
		Name     string `json:"name"`
		Password string `json:"password"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 64<<10)).Decode(&body); err != nil || body.Name == "" {
		WriteError(w, errNoPassword)
		return
	}
	u, ok := h.login(w, r, body.Name, body.Password)
	if !ok {
		return
	}
	// A cookie presented at sign-in is dropped: a session fixed by someone
	// else never becomes the user's.
	if c, err := r.Cookie(CookieName); err == nil {
		if err := h.sessions.Delete(r.Context(), c.Value); err != nil {
			h.storeError(w, "sign-in", err)
			return
		}
	}
	token, ss, err := h.sessions.Create(r.Context(), u.ID)
	if err != nil {
		h.storeError(w, "sign-in", err)
		return
	}
	h.setCookie(w, r, token, h.sessions.Absolute)
	h.log.Info("web sign-in", "user", u.Name)
	writeJSON(w, http.StatusOK, sessionBody{Name: u.Name, IsAdmin: u.IsAdmin, CSRF: ss.CSRF})
}

func (h *Handler) setCookie(w http.ResponseWriter, r *http.Request, token string, maxAge time.Duration) {
	c := &http.Cookie{Name: CookieName, Value: token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: Secure(r)}
	if maxAge > 0 {
		c.MaxAge = int(maxAge / time.Second)
	} else {
		c.MaxAge = -1
	}
	http.SetCookie(w, c)
}

func (h *Handler) serveLogout(w http.ResponseWriter, r *http.Request) {
	c, err := r.Cookie(CookieName)
	if err != nil {
		h.setCookie(w, r, "", 0)
		w.WriteHeader(http.StatusNoContent)
		return
	}
	ss, err := h.sessions.Lookup(r.Context(), c.Value)
	if err != nil && !errs.Is(err, errs.NotFound) {
		h.storeError(w, "sign-out", err)
		return
	}
	if err == nil && !ss.CSRFOK(r.Header.Get(CSRFHeader)) {
		WriteError(w, errCSRF)
		return
	}
	if err := h.sessions.Delete(r.Context(), c.Value); err != nil {
		h.storeError(w, "sign-out", err)
		return
	}
	h.setCookie(w, r, "", 0)
	w.WriteHeader(http.StatusNoContent)
}

func (h *Handler) serveSession(w http.ResponseWriter, r *http.Request) {
	ss, u, err := h.sessionUser(r)
	if errs.Is(err, errs.NotFound) {
		WriteError(w, errNotSignedIn)
		return
	}
	if err != nil {
		h.storeError(w, "session", err)
		return
	}
	writeJSON(w, http.StatusOK, sessionBody{Name: u.Name, IsAdmin: u.IsAdmin, CSRF: ss.CSRF})
}

// sessionUser resolves the request's cookie to its live session and user:
// errs.NotFound when there is none (no cookie, unknown, expired, or the
// user is gone: their sessions went with them), else the store's error.
func (h *Handler) sessionUser(r *http.Request) (Session, meta.User, error) {
	c, err := r.Cookie(CookieName)
	if err != nil {
		return Session{}, meta.User{}, errs.Errorf("web.session", errs.NotFound, "no session cookie")
	}
	ss, err := h.sessions.Lookup(r.Context(), c.Value)
	if err != nil {
		return Session{}, meta.User{}, err
	}
	u, err := h.d.UserByID(r.Context(), ss.UserID)
	return ss, u, err
}

// storeError answers a request the session store could not serve in the
// errs table's terms (503 while the database is busy or down; the cause
// stays in the log), never as a sign-out the user did not ask for.
func (h *Handler) storeError(w http.ResponseWriter, what string, err error) {
	h.log.Error("web: "+what, "err", err)
	WriteError(w, err)
}

// HasCookie says whether the request carries a session cookie at all.
func HasCookie(r *http.Request) bool {
	_, err := r.Cookie(CookieName)
	return err == nil
}

// Authenticate resolves the request's session cookie to its user. When it
// cannot (expired session, deleted user, missing CSRF token on a
// state-changing method) it answers the request itself and returns false.
// Call it only when HasCookie is true and the request has no Basic
// credentials.
func (h *Handler) Authenticate(w http.ResponseWriter, r *http.Request) (meta.User, bool) {
	ss, u, err := h.sessionUser(r)
	if errs.Is(err, errs.NotFound) {
		WriteError(w, ErrSessionEnded)
		return meta.User{}, false
	}
	if err != nil {
		h.storeError(w, "session", err)
		return meta.User{}, false
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
	default:
		if !ss.CSRFOK(r.Header.Get(CSRFHeader)) {
			WriteError(w, errCSRF)
			return meta.User{}, false
		}
	}
	return u, true
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
