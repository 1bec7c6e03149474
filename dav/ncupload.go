package dav

// Nextcloud's chunked upload ("chunking 1.0", as its clients send it):
//
//	MKCOL  /remote.php/dav/uploads/USER/ID           an upload folder
//	PUT    /remote.php/dav/uploads/USER/ID/NAME      a part, any size
//	PROPFIND …/ID                                    the parts that arrived
//	MOVE   …/ID/.file  Destination: …/files/USER/P   assemble into P
//	DELETE …/ID                                      give up
//
// The parts are kept as they came, one file each, in the node's upload
// folder (UploadsDir/UID/ID), written to a temporary name and renamed, so
// a part cut off by a dropped connection or a crash is not listed and the
// client sends it again; the ones listed survive a restart. The MOVE
// streams the parts, in name order, through the same Writer as a PUT: the
// content is cut into the drive's chunks (deduplicated), its checksums
// verified, and it becomes the file in one commit, with versions and trash
// as for any write.

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"netdisk/davlock"
	"netdisk/drive"
	"netdisk/errs"
	"netdisk/meta"
)

// validUploadName reports whether s may name an upload folder or a part:
// the clients use decimal numbers (parts are byte offsets or counters) and
// numeric transfer ids; anything that could leave the folder is refused.
func validUploadName(s string) bool {
	if s == "" || len(s) > 64 || s[0] == '.' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// ServeUpload answers one request under /remote.php/dav/uploads/USER/ for
// user u; rest is the path after USER/ ("ID" or "ID/NAME"). files is the
// handler of the user's files (a MOVE's Destination is under its prefix).
func (h *Handler) ServeUpload(w http.ResponseWriter, r *http.Request, u meta.User, rest string, files *Handler) {
	ProtectHeaders(w.Header())
	if ih, has, err := requestIf(r); err == nil && has {
		// The assembly writes the destination: the drive checks it against
		// the lock table with the tokens the MOVE submitted, as for a PUT.
		r = r.WithContext(davlock.WithTokens(r.Context(), ih.tokens()))
	}
	status, err := h.serveUpload(w, r, u, strings.Trim(rest, "/"), files)
	h.finish(w, r, status, err)
}

func (h *Handler) serveUpload(w http.ResponseWriter, r *http.Request, u meta.User, rest string, files *Handler) (int, error) {
	const op = "dav.Upload"
	if h.UploadsDir == "" {
		return 0, errs.Errorf(op, errs.Unavailable, "chunked upload is not served by this server")
	}
	id, part, _ := strings.Cut(rest, "/")
	if r.Method == "PROPFIND" && id == "" {
		// The uploads root: a folder that exists and lists nothing of interest.
		return h.propfindUploads(w, u, "", nil)
	}
	if !validUploadName(id) || strings.Contains(part, "/") || part != "" && part != ".file" && !validUploadName(part) {
		return 0, errs.Errorf(op, errs.NotFound, "no such upload")
	}
	dir := filepath.Join(h.UploadsDir, strconv.FormatInt(u.ID, 10), id)
	switch {
	case r.Method == "MKCOL" && part == "":
		if err := h.checkUploadQuota(r, u); err != nil {
			return 0, err
		}
		if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
			return 0, errs.E(op, errs.Other, "", err)
		}
		if err := os.Mkdir(dir, 0o700); errors.Is(err, fs.ErrExist) {
			return 0, errs.Errorf(op, errs.Exists, "upload %s exists", id)
		} else if err != nil {
			return 0, errs.E(op, errs.Other, "", err)
		}
		return http.StatusCreated, nil
	case r.Method == http.MethodPut && part != "" && part != ".file":
		if err := h.checkUploadQuota(r, u); err != nil {
			return 0, err
		}
		limit, err := h.partLimit(r, u, dir)
		if err != nil {
			return 0, err
		}
		return h.putPart(r, dir, part, limit)
	case r.Method == "PROPFIND" && part == "":
		parts, err := uploadParts(dir)
		if err != nil {
			return 0, err
		}
		return h.propfindUploads(w, u, id, parts)
	case r.Method == "MOVE" && part == ".file":
		return h.assemble(w, r, u, dir, files)
	case r.Method == http.MethodDelete && part == "":
		if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
			return 0, errs.Errorf(op, errs.NotFound, "no such upload")
		}
		if err := os.RemoveAll(dir); err != nil {
			return 0, errs.E(op, errs.Other, "", err)
		}
		return http.StatusNoContent, nil
	}
	w.Header().Set("Allow", "MKCOL, PUT, PROPFIND, MOVE, DELETE")
	return http.StatusMethodNotAllowed, nil
}

// checkUploadQuota refuses an upload whose announced total
// (OC-Total-Length) the user's quota cannot hold, before its parts are
// sent: 507, as the clients expect, rather than after the last part.
func (h *Handler) checkUploadQuota(r *http.Request, u meta.User) error {
	v := r.Header.Get("OC-Total-Length")
	if v == "" {
		return nil
	}
	total, err := strconv.ParseInt(v, 10, 64)
	if err != nil || total < 0 {
		return errs.Errorf("dav.Upload", errs.Invalid, "OC-Total-Length must be a byte count")
	}
	q, err := h.D.QuotaOf(r.Context(), u.ID)
	if err != nil {
		return err
	}
	if free := q.Free(); free >= 0 && total > free {
		return errs.OverQuota("dav.Upload", "", free, total, "")
	}
	return nil
}

// partLimit is how many bytes a part may bring (-1: no limit): what the
// user's free quota leaves beside the parts already staged, so parts sent
// without OC-Total-Length cannot hold more disk than the quota would let
// the file take. A body announced larger is refused before it is read.
func (h *Handler) partLimit(r *http.Request, u meta.User, dir string) (int64, error) {
	q, err := h.D.QuotaOf(r.Context(), u.ID)
	if err != nil {
		return 0, err
	}
	free := q.Free()
	if free < 0 {
		return -1, nil
	}
	parts, err := uploadParts(dir)
	if errs.Is(err, errs.NotFound) {
		return 0, errs.Errorf("dav.UploadPart", errs.Conflict, "no such upload: MKCOL it first")
	} else if err != nil {
		return 0, err
	}
	var staged int64
	for _, p := range parts {
		staged += p.size
	}
	limit := max(free-staged, 0)
	if n := expectedLength(r); n > limit {
		return 0, errs.OverQuota("dav.UploadPart", "", limit, n, "")
	}
	return limit, nil
}

// putPart stores the body as part name of the upload in dir, whole or not
// at all; a body longer than limit (when not -1) is refused as over quota.
func (h *Handler) putPart(r *http.Request, dir, name string, limit int64) (int, error) {
	const op = "dav.UploadPart"
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return 0, errs.Errorf(op, errs.Conflict, "no such upload: MKCOL it first")
	}
	tmp, err := os.CreateTemp(dir, ".part-*")
	if err != nil {
		return 0, errs.E(op, errs.Other, "", err)
	}
	ok := false
	defer func() {
		if !ok {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	var body io.Reader = r.Body
	if limit >= 0 {
		body = io.LimitReader(r.Body, limit+1)
	}
	n, err := io.Copy(tmp, body)
	if err != nil {
		return 0, errs.E(op, errs.Invalid, "", err)
	}
	if limit >= 0 && n > limit {
		return 0, errs.OverQuota(op, "", limit, n, "")
	}
	if size := expectedLength(r); size >= 0 && n != size {
		return 0, errs.Errorf(op, errs.Invalid, "body has %d bytes, %d announced", n, size)
	}
	// Durable before listed: a part the PROPFIND shows is not sent again.
	if err := tmp.Sync(); err != nil {
		return 0, errs.E(op, errs.Other, "", err)
	}
	if err := tmp.Close(); err != nil {
		return 0, errs.E(op, errs.Other, "", err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, name)); err != nil {
		return 0, errs.E(op, errs.Other, "", err)
	}
	ok = true
	return http.StatusCreated, nil
}

type uploadPart struct {
	name    string
	size    int64
	modTime time.Time
}

// uploadParts lists the parts that arrived, in assembly order: by number
// when every name is one (the clients' offsets and counters, padded or
// not), else by name.
func uploadParts(dir string) ([]uploadPart, error) {
	const op = "dav.UploadParts"
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errs.Errorf(op, errs.NotFound, "no such upload")
	}
	if err != nil {
		return nil, errs.E(op, errs.Other, "", err)
	}
	var parts []uploadPart
	numeric := true
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") || !e.Type().IsRegular() {
			continue // a part being written
		}
		fi, err := e.Info()
		if err != nil {
			continue // removed by a DELETE meanwhile
		}
		if _, err := strconv.ParseUint(e.Name(), 10, 64); err != nil {
			numeric = false
		}
		parts = append(parts, uploadPart{name: e.Name(), size: fi.Size(), modTime: fi.ModTime()})
	}
	slices.SortFunc(parts, func(a, b uploadPart) int {
		if numeric {
			x, _ := strconv.ParseUint(a.name, 10, 64)
			y, _ := strconv.ParseUint(b.name, 10, 64)
			switch {
			case x < y:
				return -1
			case x > y:
				return 1
			}
			return 0
		}
		return strings.Compare(a.name, b.name)
	})
	return parts, nil
}

// propfindUploads lists upload id (or the uploads root, id "") and its parts
// with the properties the clients read (resourcetype, getcontentlength),
// whatever the request asked: a PROPFIND of an upload is only ever that.
func (h *Handler) propfindUploads(w http.ResponseWriter, u meta.User, id string, parts []uploadPart) (int, error) {
	base := h.Prefix + "/"
	if id != "" {
		base += id + "/"
	}
	b := []byte(`<?xml version="1.0" encoding="utf-8"?>` + "\n" + `<D:multistatus xmlns:D="DAV:">`)
	b = append(b, "<D:response><D:href>"...)
	b = appendPathEscaped(b, base)
	b = append(b, "</D:href><D:propstat><D:prop><D:resourcetype><D:collection/></D:resourcetype></D:prop>"...)
	b = append(b, propstatOK...)
	b = append(b, "</D:response>\n"...)
	for _, p := range parts {
		b = append(b, "<D:response><D:href>"...)
		b = appendPathEscaped(b, base+p.name)
		b = append(b, "</D:href><D:propstat><D:prop><D:resourcetype/><D:getcontentlength>"...)
		b = strconv.AppendInt(b, p.size, 10)
		b = append(b, "</D:getcontentlength><D:getlastmodified>"...)
		b = p.modTime.UTC().AppendFormat(b, http.TimeFormat)
		b = append(b, "</D:getlastmodified></D:prop>"...)
		b = append(b, propstatOK...)
		b = append(b, "</D:response>\n"...)
	}
	b = append(b, "</D:multistatus>\n"...)
	w.Header().Set("Content-Type", "application/xml; charset=utf-8")
	w.WriteHeader(http.StatusMultiStatus)
	w.Write(b)
	return 0, nil
}

// assemble answers MOVE …/ID/.file: the parts, in order, become the file
// at the Destination in one commit, and the upload is removed.
func (h *Handler) assemble(w http.ResponseWriter, r *http.Request, u meta.User, dir string, files *Handler) (int, error) {
	const op = "dav.Assemble"
	ctx := r.Context()
	dst, err := files.destination(r)
	if err != nil {
		if errors.Is(err, errForeignHost) {
			return http.StatusBadGateway, nil
		}
		return 0, err
	}
	parts, err := uploadParts(dir)
	if err != nil {
		return 0, err
	}
	var total int64
	for _, p := range parts {
		total += p.size
	}
	if v := r.Header.Get("OC-Total-Length"); v != "" && v != strconv.FormatInt(total, 10) {
		// A part is missing: the client sends it and moves again.
		return 0, errs.Errorf(op, errs.Conflict, "the parts hold %d bytes, %s announced", total, v)
	}
	fsys := &FS{D: h.D, UID: u.ID, Name: u.Name}
	if err := files.confirmWrite(r.WithContext(ctx), fsys, dst); err != nil {
		return 0, err
	}
	mtime, hasMtime := ocMtime(r)
	o := drive.WriteOptions{ExpectedSize: total, ModTime: mtime}
	o.WantMD5, o.WantSHA1 = ocChecksum(r)
	fw, err := h.D.Create(ctx, u.ID, dst, o)
	if err != nil {
		return 0, err
	}
	if err := copyParts(ctx, fw, dir, parts); err != nil {
		fw.Abort()
		return 0, err
	}
	node, err := fw.Commit()
	if err != nil {
		return 0, err
	}
	if err := os.RemoveAll(dir); err != nil {
		// The file is committed; what is left is only disk the expiry frees.
		h.Log.Warn("upload folder not removed", "err", err)
	}
	hd := w.Header()
	hd.Set("ETag", ETag(node))
	setOCHeaders(hd, node)
	if hasMtime {
		hd.Set("X-OC-MTime", "accepted")
	}
	setOCChecksum(hd, node)
	if fw.Existed() {
		return http.StatusNoContent, nil
	}
	return http.StatusCreated, nil
}

func copyParts(ctx context.Context, fw *drive.Writer, dir string, parts []uploadPart) error {
	const op = "dav.Assemble"
	for _, p := range parts {
		if err := ctx.Err(); err != nil {
			return errs.E(op, errs.Canceled, "", err)
		}
		f, err := os.Open(filepath.Join(dir, p.name))
		if err != nil {
			return errs.E(op, errs.Other, "", err)
		}
		_, err = fw.ReadFrom(f)
		f.Close()
		if err != nil {
			if !errs.Classified(err) {
				err = errs.E(op, errs.Other, "", err)
			}
			return err
		}
	}
	return nil
}

// ExpireUploads removes the upload folders untouched since before: uploads
// the clients gave up on, as abandoned sessions expire.
func (h *Handler) ExpireUploads(before time.Time) (int, error) {
	if h.UploadsDir == "" {
		return 0, nil
	}
	users, err := os.ReadDir(h.UploadsDir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	n := 0
	for _, ud := range users {
		ups, err := os.ReadDir(filepath.Join(h.UploadsDir, ud.Name()))
		if err != nil {
			continue
		}
		for _, up := range ups {
			dir := filepath.Join(h.UploadsDir, ud.Name(), up.Name())
			if last, err := lastTouched(dir); err == nil && last.Before(before) {
				if os.RemoveAll(dir) == nil {
					n++
				}
			}
		}
	}
	return n, nil
}

// lastTouched is the latest modification time of dir and its parts.
func lastTouched(dir string) (time.Time, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return time.Time{}, err
	}
	last := fi.ModTime()
	ents, err := os.ReadDir(dir)
	if err != nil {
		return time.Time{}, err
	}
	for _, e := range ents {
		if i, err := e.Info(); err == nil && i.ModTime().After(last) {
			last = i.ModTime()
		}
	}
	return last, nil
}
