package api

import (
	"net/http"
	"strconv"
	"strings"

	"netdisk/errs"
	"netdisk/meta"
	"netdisk/preview"
	"netdisk/thumb"
)

// ThumbMaxAge is how long a browser may reuse a thumbnail without asking
// again. Short, because the URL names a path, not a version: the web page
// adds the file's hash (&v=) so a changed file is a new URL anyway, and
// asking again costs a 304 that reads only the file's record.
const ThumbMaxAge = 300

func (a *API) thumbRoutes() []Route {
	return a.serviceRoutes(func() bool { return a.Previews != nil }, "api.thumb", "thumbnails are not served by this server", []Route{
		{Pattern: "GET /api/v1/thumb", Handler: a.thumb},
	})
}

// thumb answers GET /api/v1/thumb?path=P&size=S.
func (a *API) thumb(w http.ResponseWriter, r *http.Request, u meta.User) {
	q := r.URL.Query()
	size, err := thumbSize(q.Get("size"), "")
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	n, err := a.Previews.Stat(r.Context(), u.ID, q.Get("path"))
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	a.ServeThumb(w, r, u, n, size, a.WriteError)
}

// ServeThumb answers with the thumbnail of user u's file n at size: 304
// when If-None-Match names its ETag (nothing is read or made), else the
// image with its ETag and Cache-Control; an error goes to fail, the
// caller's edge (JSON for the API, text for the Nextcloud shape).
func (a *API) ServeThumb(w http.ResponseWriter, r *http.Request, u meta.User, n meta.Node, size int, fail func(http.ResponseWriter, *http.Request, error)) {
	etag := preview.ETag(n, size)
	h := w.Header()
	if etagMatch(r.Header.Get("If-None-Match"), etag) {
		h.Set("ETag", etag)
		h.Set("Cache-Control", "private, max-age="+strconv.Itoa(ThumbMaxAge))
		w.WriteHeader(http.StatusNotModified)
		return
	}
	p, err := a.Previews.Thumbnail(r.Context(), u.ID, n, size)
	if err != nil {
		fail(w, r, err)
		return
	}
	h.Set("Content-Type", p.ContentType)
	h.Set("Content-Length", strconv.Itoa(len(p.Data)))
	h.Set("ETag", p.ETag)
	h.Set("Cache-Control", "private, max-age="+strconv.Itoa(ThumbMaxAge))
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	w.Write(p.Data)
}

// NextcloudPreview answers the Nextcloud clients' preview request,
// GET /index.php/core/preview?fileId=ID&x=W&y=H (a=, mode= and forceIcon=
// are accepted and ignored: the thumbnail always keeps the image's aspect
// ratio). fileId is the node id, the user's own: another user's id is 404
// exactly as an unknown one. Errors are text, as over WebDAV.
func (a *API) NextcloudPreview(w http.ResponseWriter, r *http.Request, u meta.User) {
	q := r.URL.Query()
	id, err := strconv.ParseInt(q.Get("fileId"), 10, 64)
	if err != nil || id <= 0 {
		textError(w, r, errs.Errorf("api.preview", errs.Invalid, "fileId must be a file id"))
		return
	}
	a.nextcloudPreview(w, r, u, func() (meta.Node, error) { return a.Previews.StatID(r.Context(), u.ID, id) })
}

// NextcloudPreviewFile answers GET /index.php/core/preview.png?file=/PATH&x=W&y=H,
// the older shape that names the file by path.
func (a *API) NextcloudPreviewFile(w http.ResponseWriter, r *http.Request, u meta.User) {
	p := r.URL.Query().Get("file")
	a.nextcloudPreview(w, r, u, func() (meta.Node, error) { return a.Previews.Stat(r.Context(), u.ID, p) })
}

func (a *API) nextcloudPreview(w http.ResponseWriter, r *http.Request, u meta.User, stat func() (meta.Node, error)) {
	if a.Previews == nil {
		textError(w, r, errs.Errorf("api.preview", errs.Unavailable, "thumbnails are not served by this server"))
		return
	}
	q := r.URL.Query()
	size, err := thumbSize(q.Get("x"), q.Get("y"))
	if err != nil {
		textError(w, r, err)
		return
	}
	n, err := stat()
	if err != nil {
		textError(w, r, err)
		return
	}
	a.ServeThumb(w, r, u, n, size, textError)
}

func textError(w http.ResponseWriter, _ *http.Request, err error) {
	status := Status(err)
	errs.SetErrorHeaders(w.Header(), status)
	http.Error(w, errs.Message(err), status)
}

// thumbSize reads the requested size (the larger of two, for width and
// height) and snaps it to a bucket; none is the default size.
func thumbSize(x, y string) (int, error) {
	size := 0
	for _, s := range []string{x, y} {
		if s == "" {
			continue
		}
		v, err := strconv.Atoi(s)
		if err != nil || v <= 0 {
			return 0, errs.Errorf("api.thumb", errs.Invalid, "size must be a number of pixels (64, 256 or 1024), not %q", s)
		}
		size = max(size, v)
	}
	return thumb.Bucket(size), nil
}

// etagMatch reports whether an If-None-Match header names etag (weakly, as
// RFC 9110 compares for If-None-Match), or is "*".
func etagMatch(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == "*" || t == etag {
			return true
		}
	}
	return false
}
