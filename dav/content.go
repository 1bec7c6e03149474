package dav

import (
	"mime"
	"net/http"
	"path"
	"strings"

	"netdisk/meta"
)

// User content never acts as the drive's page. A file opened at /dav/… in a
// signed-in browser is in the drive's origin, where the session cookie is
// good and /web/session hands out the CSRF token: an HTML, SVG, XHTML or XML
// file (or anything a browser would sniff into one) could run its script
// with the user's rights. Three locks, each enough on its own:
//   - every /dav/ answer carries a sandbox CSP (the document, if rendered at
//     all, gets an opaque origin and runs no script) and nosniff;
//   - only passive types (raster images, audio, video, plain text) are shown
//     inline; everything else, whatever its name, is a download
//     (Content-Disposition: attachment);
//   - Cross-Origin-Resource-Policy keeps other sites from embedding the
//     drive's files with the browser's credentials (<script src>, <img>).
//
// The web page previews through its own viewer (an <img> or a fetch into a
// <pre>), which needs none of this to be inline.

// ContentPolicy is the Content-Security-Policy of every /dav/ answer.
const ContentPolicy = "sandbox; default-src 'none'; img-src 'self' data:; media-src 'self'; style-src 'unsafe-inline'"

// ProtectHeaders sets the headers every answer carrying user content (or
// naming it: error messages quote paths) has, whatever its type and status.
func ProtectHeaders(hd http.Header) {
	hd.Set("Content-Security-Policy", ContentPolicy)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Cross-Origin-Resource-Policy", "same-origin")
}

// Inline reports whether a file of media type ctype may be shown by the
// browser itself: raster images, audio, video and plain text, which run no
// script in any browser. Everything else (HTML, SVG, XML, PDF, scripts,
// unknown types) is served as a download.
func Inline(ctype string) bool {
	mt, _, err := mime.ParseMediaType(ctype)
	if err != nil {
		return false
	}
	switch mt {
	case "image/png", "image/jpeg", "image/gif", "image/webp", "image/avif", "image/bmp",
		"image/x-icon", "image/vnd.microsoft.icon", "text/plain":
		return true
	}
	return strings.HasPrefix(mt, "audio/") || strings.HasPrefix(mt, "video/")
}

// Attachment is the Content-Disposition of a download of the file at p.
func Attachment(p string) string {
	name := path.Base(p)
	if d := mime.FormatMediaType("attachment", map[string]string{"filename": name}); d != "" {
		return d
	}
	// A name FormatMediaType cannot encode still downloads, under the
	// browser's own choice of name.
	return "attachment"
}

// setContentHeaders sets the type and disposition of file (or link) n.
func setContentHeaders(hd http.Header, n meta.Node) {
	p := n.Path
	ct := NodeContentType(n)
	hd.Set("Content-Type", ct)
	if !Inline(ct) {
		hd.Set("Content-Disposition", Attachment(p))
	}
}
