package dav

import (
	"math"
	"net/http"
	"strconv"
	"time"

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
	mtime, hasMtime := ocMtime(r)
	fw, err := fs.D.Create(ctx, fs.UID, name, drive.WriteOptions{ExpectedSize: size, ModTime: mtime})
	if err != nil {
		return 0, err
	}
	n, err := fw.ReadFrom(r.Body)
	if err == nil && size >= 0 && n != size {
		err = errs.Errorf("dav.Put", errs.Invalid, "body has %d bytes, %d announced", n, size)
	}
	if err != nil {
		fw.Abort()
		if errs.KindOf(err) == errs.Other {
			// The body could not be read: the client went away or sent garbage.
			err = errs.E("dav.Put", errs.Invalid, name, err)
		}
		return 0, err
	}
	node, err := fw.Commit()
	if err != nil {
		return 0, err
	}
	w.Header().Set("ETag", ETag(node))
	if hasMtime {
		// ownCloud's answer: clients (rclone) then skip setting the time again.
		w.Header().Set("X-OC-MTime", "accepted")
	}
	setOCChecksum(w.Header(), node)
	if fw.Existed() {
		return http.StatusNoContent, nil
	}
	return http.StatusCreated, nil
}

// ocMtime reads X-OC-Mtime, the ownCloud/Nextcloud header by which a client
// (rclone with vendor owncloud or nextcloud) gives the file's modification
// time in Unix seconds (fractions allowed). ok is false when absent or not a
// usable number: the server's clock is used then, as without the header.
func ocMtime(r *http.Request) (t time.Time, ok bool) {
	v := r.Header.Get("X-OC-Mtime")
	if v == "" {
		return time.Time{}, false
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		return time.Unix(n, 0), true
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) > 1<<40 {
		return time.Time{}, false
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9)), true
}
