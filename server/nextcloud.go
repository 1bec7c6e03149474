package server

// The Nextcloud and ownCloud sync clients' endpoints: status.php and OCS
// (api/ocs.go), and WebDAV under their paths, served by the one dav
// handler with another prefix.

import (
	"net/http"
	"strings"

	"netdisk/api"
	"netdisk/dav"
	"netdisk/errs"
	"netdisk/meta"
	"netdisk/web"
)

// davFilesPrefix is where the clients find a user's files:
// /remote.php/dav/files/USER/.
const davFilesPrefix = "/remote.php/dav/files/"

func (s *Server) mountNextcloud() {
	s.mux.HandleFunc("GET /status.php", s.api.StatusPHP)
	for _, v := range []string{"v1", "v2"} {
		s.mux.HandleFunc("GET /ocs/"+v+".php/cloud/capabilities", s.authed(false, s.api.OCSCapabilities, s.davUnauthorized))
		s.mux.HandleFunc("GET /ocs/"+v+".php/cloud/user", s.authed(false, s.api.OCSUser, s.davUnauthorized))
	}
	legacy := s.dav.At("/remote.php/webdav")
	s.mux.HandleFunc("/remote.php/webdav/", s.authed(false, legacy.Serve, s.davUnauthorized))
	s.mux.HandleFunc("/remote.php/webdav", s.authed(false, legacy.Serve, s.davUnauthorized))
	s.mux.HandleFunc(davFilesPrefix, s.authed(false, s.davFiles, s.davUnauthorized))
	s.mux.HandleFunc(davUploadsPrefix, s.authed(false, s.davUploads, s.davUnauthorized))
	s.mux.HandleFunc(davTrashbinPrefix, s.authed(false, s.davTrashbin, s.davUnauthorized))
	s.mux.HandleFunc(davVersionsPrefix, s.authed(false, s.davVersions, s.davUnauthorized))
	for _, v := range []string{"v1", "v2"} {
		base := "/ocs/" + v + ".php/apps/files_sharing/api/v1/shares"
		s.mux.HandleFunc("GET "+base, s.authed(false, s.api.OCSListShares, s.davUnauthorized))
		s.mux.HandleFunc("POST "+base, s.authed(false, s.api.OCSCreateShare, s.davUnauthorized))
		s.mux.HandleFunc("GET "+base+"/{id}", s.authed(false, s.api.OCSGetShare, s.davUnauthorized))
		s.mux.HandleFunc("PUT "+base+"/{id}", s.authed(false, s.api.OCSUpdateShare, s.davUnauthorized))
		s.mux.HandleFunc("DELETE "+base+"/{id}", s.authed(false, s.api.OCSDeleteShare, s.davUnauthorized))
	}
}

// The clients' trash and versions views (dav/nchistory.go):
// /remote.php/dav/trashbin/USER/… and /remote.php/dav/versions/USER/….
const (
	davTrashbinPrefix = "/remote.php/dav/trashbin/"
	davVersionsPrefix = "/remote.php/dav/versions/"
)

func (s *Server) davTrashbin(w http.ResponseWriter, r *http.Request, u meta.User) {
	if user, ok := s.pathUser(w, r, u, davTrashbinPrefix); ok {
		s.dav.At(davTrashbinPrefix+user).ServeTrashbin(w, r, u)
	}
}

func (s *Server) davVersions(w http.ResponseWriter, r *http.Request, u meta.User) {
	if user, ok := s.pathUser(w, r, u, davVersionsPrefix); ok {
		s.dav.At(davVersionsPrefix+user).ServeVersions(w, r, u)
	}
}

// pathUser returns the USER that follows prefix in the request's path when
// it names the signed-in user; another user's trash or versions are
// answered as what does not exist, as their files are.
func (s *Server) pathUser(w http.ResponseWriter, r *http.Request, u meta.User, prefix string) (string, bool) {
	user, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, prefix), "/")
	if !sameUser(user, u.Name) {
		s.davUnauthorized(w, r, errs.Errorf("server.nextcloud", errs.NotFound, "no such folder"))
		return "", false
	}
	return user, true
}

// ocsCookieUser signs an OCS call in with the web page's session only when
// it carries OCS-APIRequest: true, Nextcloud's rule: a page of another
// site cannot make the browser send that header without a CORS preflight,
// which the daemon never grants. Without it the cookie is refused (401
// without WWW-Authenticate, so a browser shows no password dialog); a call
// with Basic credentials is judged by them alone (handled false). A change
// (POST, PUT, DELETE) needs the page's CSRF token besides, as every
// cookie-signed change does.
func (s *Server) ocsCookieUser(w http.ResponseWriter, r *http.Request) (u meta.User, ok, handled bool) {
	if _, _, basic := r.BasicAuth(); basic || !web.HasCookie(r) {
		return meta.User{}, false, false
	}
	if !strings.EqualFold(r.Header.Get("OCS-APIRequest"), "true") {
		api.WriteOCSError(w, r, errs.Errorf("server.ocs", errs.Unauthenticated, "CSRF check failed: a browser's OCS call needs the header OCS-APIRequest: true"))
		return meta.User{}, false, true
	}
	u, ok = s.web.Authenticate(w, r)
	return u, ok, true
}

func isOCS(p string) bool { return strings.HasPrefix(p, "/ocs/") }

// DAV is the WebDAV handler (the daemon expires its chunked uploads).
func (s *Server) DAV() *dav.Handler { return s.dav }

// davUploadsPrefix is where the clients' chunked uploads go:
// /remote.php/dav/uploads/USER/ID/….
const davUploadsPrefix = "/remote.php/dav/uploads/"

// davUploads serves /remote.php/dav/uploads/USER/…, USER checked as for
// davFiles.
func (s *Server) davUploads(w http.ResponseWriter, r *http.Request, u meta.User) {
	rest := strings.TrimPrefix(r.URL.Path, davUploadsPrefix)
	user, rest, _ := strings.Cut(rest, "/")
	if !sameUser(user, u.Name) {
		s.davUnauthorized(w, r, errs.Errorf("server.davUploads", errs.NotFound, "no such upload"))
		return
	}
	s.dav.At(davUploadsPrefix+user).ServeUpload(w, r, u, rest, s.dav.At(davFilesPrefix+user))
}

// sameUser reports whether a user name in a path names the signed-in
// user: names compare as the store compares them, ignoring ASCII case.
func sameUser(inPath, name string) bool { return strings.EqualFold(inPath, name) }

// davFiles serves /remote.php/dav/files/USER/…: USER names the drive, and
// only its owner may use it. Another user's name is answered as a path
// that does not exist, never as one that exists but is forbidden.
func (s *Server) davFiles(w http.ResponseWriter, r *http.Request, u meta.User) {
	rest := strings.TrimPrefix(r.URL.Path, davFilesPrefix)
	user, _, _ := strings.Cut(rest, "/")
	if !sameUser(user, u.Name) {
		s.davUnauthorized(w, r, errs.Errorf("server.davFiles", errs.NotFound, "no such drive"))
		return
	}
	s.dav.At(davFilesPrefix+user).Serve(w, r, u)
}
