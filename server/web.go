package server

import (
	"net/http"
	"strings"

	"netdisk/errs"
	"netdisk/meta"
	"netdisk/web"
)

// The browser interface (package web) hooks in here: its routes, and the
// session cookie as a second way to authenticate /api/ and /dav/ requests.
//
// A request with Basic credentials is judged by them alone, exactly as
// before. Without them, a request carrying the session cookie is judged by
// the session (web.Handler.Authenticate: expiry, CSRF token on
// state-changing methods); its failures are answered without
// WWW-Authenticate so the browser shows the page's message, not its own
// password dialog. On /dav/ the cookie is good for GET and HEAD only
// (downloads, previews): the page changes files through the API.

func (s *Server) mountWeb() {
	sessions := web.NewSessions(s.d.WebSessions(), s.now)
	sessions.Log = s.log
	s.web = web.New(web.Config{
		Drive:    s.d,
		Sessions: sessions,
		Logger:   s.log,
		Login: func(w http.ResponseWriter, r *http.Request, name, pass string) (meta.User, bool) {
			u, token, ok := s.login(w, r, name, pass, func(w http.ResponseWriter, r *http.Request, err error) {
				web.WriteError(w, err)
			})
			if ok && token != "" {
				// A session knows no token: made from one, it could
				// change the password the token must not.
				web.WriteError(w, errs.Errorf("server.web", errs.Permission, "app tokens are for devices: sign in to the page with your password"))
				return meta.User{}, false
			}
			return u, ok
		},
	})
	for _, rt := range s.web.Routes() {
		s.mux.HandleFunc(rt.Pattern, rt.Handler)
	}
	s.mux.HandleFunc("GET /web/zip", s.authed(false, s.web.ServeZip, s.apiUnauthorized))
}

// Web is the browser interface (for tests and the daemon's wiring).
func (s *Server) Web() *web.Handler { return s.web }

// cookieUser authenticates by session cookie when the request has no Basic
// credentials and carries one. handled is false when the cookie does not
// apply (then Basic auth decides, as for a client that has no cookie).
func (s *Server) cookieUser(w http.ResponseWriter, r *http.Request) (u meta.User, ok, handled bool) {
	if s.web != nil && isOCS(r.URL.Path) {
		return s.ocsCookieUser(w, r) // nextcloud.go: Nextcloud's own rule
	}
	if s.web == nil || !cookieRoute(r.URL.Path) {
		return meta.User{}, false, false
	}
	if _, _, basic := r.BasicAuth(); basic {
		return meta.User{}, false, false
	}
	if !web.HasCookie(r) {
		if r.Header.Get(web.PageHeader) != "" {
			// The page after its cookie expired in the browser: answer
			// without WWW-Authenticate, so the page can show its sign-in
			// form instead of the browser's password dialog.
			web.WriteError(w, web.ErrSessionEnded)
			return meta.User{}, false, true
		}
		return meta.User{}, false, false
	}
	if isDAV(r.URL.Path) && r.Method != http.MethodGet && r.Method != http.MethodHead {
		return meta.User{}, false, false
	}
	u, ok = s.web.Authenticate(w, r)
	return u, ok, true
}

// cookieRoute: the page needs the API, downloads and the zip stream; the
// rest (/metrics) keeps Basic credentials only.
func cookieRoute(p string) bool {
	return strings.HasPrefix(p, "/api/") || strings.HasPrefix(p, "/web/") || isDAV(p)
}

func isDAV(p string) bool { return p == "/dav" || strings.HasPrefix(p, "/dav/") }
