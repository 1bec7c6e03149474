package server

// The Nextcloud and ownCloud sync clients' endpoints: status.php and OCS
// (api/ocs.go), and WebDAV under their paths, served by the one dav
// handler with another prefix.

import (
	"net/http"
	"strings"

	"netdisk/dav"
	"netdisk/errs"
	"netdisk/meta"
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
}

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
