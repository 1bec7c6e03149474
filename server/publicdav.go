package server

import (
	"net/http"
	"strings"

	"netdisk/dav"
	"netdisk/drive"
	"netdisk/errs"
)

// A public link over WebDAV, for rclone, davfs2 and the Nextcloud clients:
// BASE/public.php/dav/files/TOKEN/, Basic user the token (or none),
// password the link's (empty when it has none). The request is served by
// the owner's own WebDAV handler scoped to the link (dav.Handler.ForLink):
// the same PROPFIND, GET (sendfile) and PUT as the owner's, in a view
// whose root is the linked node, which the drive maps onto the owner's
// tree (drive.WithLink: every path is cleaned, so "..", however encoded,
// stops at the link's root; a Destination must lie under this link's
// prefix). A read link answers only reads (anything else 403); a
// read-write link also writes, as the owner (their quota, their trash);
// an upload-only link is not served over WebDAV (403: it must never list,
// and a WebDAV client cannot work without listing). The link's root
// itself cannot be deleted, moved or replaced through it.
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
	// What the link's permission answers is the handler's to decide (the
	// same rule its OPTIONS lists).
	s.dav.ForLink(publicDAVPrefix+token, pl).Serve(w, r, pl.Owner)
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
