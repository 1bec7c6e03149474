package dav

import (
	"math"
	"net/http"
	"strconv"
	"strings"
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
	o := drive.WriteOptions{ExpectedSize: size, ModTime: mtime}
	o.WantMD5, o.WantSHA1 = ocChecksum(r)
	fw, err := fs.D.Create(ctx, fs.UID, name, o)
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
	setOCHeaders(w.Header(), node)
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

// ocChecksum reads OC-Checksum ("SHA1:<hex>", "MD5:<hex>", several separated
// by spaces), the checksum ownCloud clients (rclone) send with a PUT so the
// server can refuse a body damaged on the way. Other types (ADLER32) and
// malformed values are ignored.
func ocChecksum(r *http.Request) (md5, sha1 string) {
	for _, f := range strings.Fields(r.Header.Get("OC-Checksum")) {
		typ, v, ok := strings.Cut(f, ":")
		v = strings.ToLower(v)
		if !ok || !isHex(v) {
			continue
		}
		switch {
		case strings.EqualFold(typ, "MD5") && len(v) == 32:
			md5 = v
		case strings.EqualFold(typ, "SHA1") && len(v) == 40:
			sha1 = v
		}
	}
	return md5, sha1
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
