package server

import (
	"net/http"
	"net/url"
	"strings"

	"netdisk/api"
	"netdisk/dav"
	"netdisk/errs"
)

// A browser attaches credentials it holds for the daemon — the session
// cookie, and Basic credentials it has cached once a user typed them for
// /dav/ or /metrics — to requests other sites make it send. The methods and
// bodies a page may send to another origin without asking it first (a CORS
// preflight, which the daemon never grants) are GET, HEAD and POST with a
// form's or text/plain body; everything else (PUT, DELETE, the WebDAV
// methods, a JSON body, custom headers) is refused by the browser itself.
// So, whatever the credentials:
//   - a state-changing request (any method but GET, HEAD, OPTIONS) that the
//     browser says comes from another origin is refused here: by
//     Sec-Fetch-Site when the browser sends it (anything but same-origin or
//     none, the user's own navigation), else by Origin, which must be the
//     daemon's own. Clients that are not browsers send neither and are
//     unaffected. Under /api/ a GET or HEAD from another origin is refused
//     too, by Sec-Fetch-Site;
//   - a POST to the API must declare its body JSON (api.RequireJSON);
//   - POST on /dav/ does nothing (dav.Handler answers 405).
//
// Same-site is refused as well as cross-site: another port of the same host
// is another origin but the same site, and SameSite cookies go there.
//
// The same wrapper gives every answer X-Content-Type-Options: nosniff, and
// every /dav/ answer (the 401 before the WebDAV handler included) the user
// content headers (dav.ProtectHeaders).
func guardBrowser(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		if isDAV(r.URL.Path) {
			dav.ProtectHeaders(w.Header())
		}
		if crossOrigin(r) {
			err := errs.Errorf("server.origin", errs.Permission, "cross-origin %s refused", r.Method)
			if strings.HasPrefix(r.URL.Path, "/api/") || strings.HasPrefix(r.URL.Path, "/web/") {
				api.WriteJSON(w, api.Status(err), api.ErrorBody(err))
			} else {
				http.Error(w, errs.Message(err), api.Status(err))
			}
			return
		}
		h.ServeHTTP(w, r)
	})
}

// crossOrigin reports whether r changes state and a browser sent it on
// behalf of another origin.
func crossOrigin(r *http.Request) bool {
	switch r.Method {
	case http.MethodOptions:
		return false
	case http.MethodGet, http.MethodHead:
		// Reading is open to links from elsewhere (a file's /dav/ URL in a
		// chat), except the API: no page of another site has a reason to
		// call it, and some GETs act (an agent's event stream registers
		// the agent and hands it work). Browsers send no Origin on these,
		// so only fetch metadata can tell.
		if !strings.HasPrefix(r.URL.Path, "/api/") {
			return false
		}
		s := r.Header.Get("Sec-Fetch-Site")
		return s != "" && s != "same-origin" && s != "none"
	}
	// Fetch metadata is the browser's own verdict, sent on every request
	// to a secure origin (HTTPS, localhost): trust it alone when present,
	// so a proxy that rewrites Host does not break the page.
	switch r.Header.Get("Sec-Fetch-Site") {
	case "same-origin", "none":
		return false
	case "":
	default: // same-site, cross-site, and whatever a future browser says
		return true
	}
	o := r.Header.Get("Origin")
	if o == "" {
		return false // not a browser, or one that sends no Origin on this request
	}
	u, err := url.Parse(o)
	if err != nil || u.Host == "" { // "null": a sandboxed document, a redirect across origins
		return true
	}
	return !strings.EqualFold(withoutDefaultPort(u.Host, u.Scheme), withoutDefaultPort(r.Host, u.Scheme))
}

func withoutDefaultPort(host, scheme string) string {
	switch scheme {
	case "http":
		return strings.TrimSuffix(host, ":80")
	case "https":
		return strings.TrimSuffix(host, ":443")
	}
	return host
}
