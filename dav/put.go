package dav

import (
	"net/http"
	"strconv"

	"netdisk/drive"
	"netdisk/errs"
)

// expectedLength returns the body size a PUT announces: Content-Length, or
// X-Expected-Entity-Length, which macOS Finder sends with chunked bodies.
// -1 when unknown.
func expectedLength(r *http.Request) int64 {
	if r.ContentLength >= 0 {
		return r.ContentLength
	}
	if v := r.Header.Get("X-Expected-Entity-Length"); v != "" {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 {
			return n
		}
	}
	return -1
}

// put streams the body into a new version of name and commits it only when
// the whole body arrived: a cut-off PUT leaves the old version untouched.
func (h *Handler) put(w http.ResponseWriter, r *http.Request, fs *FS, name string) (int, error) {
	ctx := r.Context()
	size := expectedLength(r)
	fw, err := fs.D.Create(ctx, fs.UID, name, drive.WriteOptions{ExpectedSize: size})
	if err != nil {
		return 0, err
	}
	n, err := fw.ReadFrom(r.Body)
	if err == nil && size >= 0 && n != size {
		err = errs.Errorf("dav.Put", errs.Invalid, "body has %d bytes, %d announced", n, size)
	}
	if err != nil {
		fw.Abort()
		if !errs.Classified(err) {
			// The body could not be read: the client went away or sent
			// garbage. A failure of the drive (a full disk: 507, anything
			// else: 500) keeps its kind and never shows its server paths.
			err = errs.E("dav.Put", errs.Invalid, name, err)
		}
		return 0, err
	}
	node, err := fw.Commit()
	if err != nil {
		return 0, err
	}
	w.Header().Set("ETag", ETag(node))
	if fw.Existed() {
		return http.StatusNoContent, nil
	}
	return http.StatusCreated, nil
}
