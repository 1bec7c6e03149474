package dav

// Nextcloud's chunked upload ("chunking 1.0", as its clients send it):
//
//	MKCOL  /remote.php/dav/uploads/USER/ID           an upload folder
//	PUT    /remote.php/dav/uploads/USER/ID/NAME      a part, any size
//	PROPFIND …/ID                                    the parts that arrived
//	MOVE   …/ID/.file  Destination: …/files/USER/P   assemble into P
//	DELETE …/ID                                      give up
//
// An upload folder is one of our upload sessions (drive/parts.go): the
// MKCOL opens it, reserving the OC-Total-Length the client announces (507
// when the quota cannot hold it; the first part's, when the MKCOL did not
// say); each part is stored durably in the chunk store and recorded in the
// metadata store before it is acknowledged, so a part cut off by a dropped
// connection or a crash is not listed and the client sends it again, and
// any node lists, continues and assembles an upload another node began. The
// MOVE re-cuts the parts, in name order, into the drive's chunks
// (deduplicated), verifies the checksums and commits the file in one
// commit, with versions and trash as for any write. An upload the client
// gives up on expires with the sessions (--session-ttl).

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"netdisk/davlock"
	"netdisk/drive"
	"netdisk/errs"
	"netdisk/meta"
)

// validUploadName reports whether s may name an upload folder or a part:
// the clients use decimal numbers (parts are byte offsets or counters) and
// numeric transfer ids; anything else that could be a path is refused.
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

// uploadSession is the id of the session behind uid's upload folder name:
// derived, so every node finds it without a table of its own, and distinct
// per user (another user's folder of the same name is another session).
func uploadSession(uid int64, name string) string {
	h := sha256.Sum256([]byte("nextcloud-upload\x00" + strconv.FormatInt(uid, 10) + "\x00" + name))
	return "nc" + hex.EncodeToString(h[:15])
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
	ctx := r.Context()
	name, part, _ := strings.Cut(rest, "/")
	if r.Method == "PROPFIND" && name == "" {
		// The uploads root: the user's upload folders still open.
		names, err := h.D.PartsUploads(ctx, u.ID)
		if err != nil {
			return 0, err
		}
		return h.propfindUploads(w, "", nil, names)
	}
	if !validUploadName(name) || strings.Contains(part, "/") || part != "" && part != ".file" && !validUploadName(part) {
		return 0, errs.Errorf(op, errs.NotFound, "no such upload")
	}
	id := uploadSession(u.ID, name)
	switch {
	case r.Method == "MKCOL" && part == "":
		total, err := totalLength(r)
		if err != nil {
			return 0, err
		}
		if err := h.D.OpenPartsSession(ctx, u.ID, id, name, max(total, 0), h.D.Now()); err != nil {
			return 0, err
		}
		return http.StatusCreated, nil
	case r.Method == http.MethodPut && part != "" && part != ".file":
		limit, err := h.partLimit(r, u, id, name, part)
		if err != nil {
			return 0, err
		}
		if _, err := h.D.PutSessionPart(ctx, u.ID, id, part, r.Body, limit, h.D.Now()); err != nil {
			return 0, uploadErr(err)
		}
		return http.StatusCreated, nil
	case r.Method == "PROPFIND" && part == "":
		parts, err := h.D.SessionParts(ctx, u.ID, id)
		if err != nil {
			return 0, uploadErr(err)
		}
		return h.propfindUploads(w, name, parts, nil)
	case r.Method == "MOVE" && part == ".file":
		return h.assemble(w, r, u, id, files)
	case r.Method == http.MethodDelete && part == "":
		if _, err := h.D.SessionParts(ctx, u.ID, id); err != nil {
			return 0, uploadErr(err)
		}
		if _, err := h.D.DropSession(ctx, id, h.D.Now()); err != nil {
			return 0, err
		}
		return http.StatusNoContent, nil
	}
	w.Header().Set("Allow", "MKCOL, PUT, PROPFIND, MOVE, DELETE")
	return http.StatusMethodNotAllowed, nil
}

// uploadErr says "no such upload" for a session that is gone: the folder
// was never made, was given up or expired.
func uploadErr(err error) error {
	if errors.Is(err, meta.ErrNoSession) || errors.Is(err, meta.ErrSessionClosed) {
		return errs.Errorf("dav.Upload", errs.NotFound, "no such upload")
	}
	return err
}

// totalLength is the request's OC-Total-Length, -1 when it has none.
func totalLength(r *http.Request) (int64, error) {
	v := r.Header.Get("OC-Total-Length")
	if v == "" {
		return -1, nil
	}
	total, err := strconv.ParseInt(v, 10, 64)
	if err != nil || total < 0 {
		return 0, errs.Errorf("dav.Upload", errs.Invalid, "OC-Total-Length must be a byte count")
	}
	return total, nil
}

// partLimit is how many bytes part may bring (-1: no limit): what the
// session reserved beside the other parts; for an upload whose total was
// never announced, what the user's free quota leaves beside them, so parts
// cannot hold more than the quota would let the file take. The first part
// that announces a total of an upload opened without one reserves it (507
// when the quota cannot hold it). A body announced larger than the limit
// is refused before it is read.
func (h *Handler) partLimit(r *http.Request, u meta.User, id, name, part string) (int64, error) {
	const op = "dav.UploadPart"
	ctx := r.Context()
	ss, err := h.D.Session(ctx, u.ID, id)
	if errors.Is(err, meta.ErrNoSession) || err == nil && ss.State != meta.SessionOpen {
		return 0, errs.Errorf(op, errs.Conflict, "no such upload: MKCOL it first")
	} else if err != nil {
		return 0, err
	}
	parts, err := h.D.SessionParts(ctx, u.ID, id)
	if err != nil {
		return 0, uploadErr(err)
	}
	var staged int64
	for _, p := range parts {
		if p.Name != part {
			staged += p.Size
		}
	}
	total, err := totalLength(r)
	if err != nil {
		return 0, err
	}
	if ss.Size == 0 && total > 0 && len(parts) == 0 {
		// Opened without a size: this part's announcement reserves it, in
		// the session's place (nothing is in it yet).
		if q, err := h.D.QuotaOf(ctx, u.ID); err != nil {
			return 0, err
		} else if free := q.Free(); free >= 0 && total > free {
			return 0, errs.OverQuota(op, "", free, total, "")
		}
		if _, err := h.D.DropSession(ctx, id, h.D.Now()); err != nil {
			return 0, err
		}
		if err := h.D.OpenPartsSession(ctx, u.ID, id, name, total, h.D.Now()); err != nil {
			if errs.Is(err, errs.Quota) {
				// Lost a race for the space: the folder stays, as it was.
				h.D.OpenPartsSession(ctx, u.ID, id, name, 0, h.D.Now())
			}
			return 0, err
		}
		ss.Size = total
	}
	var limit int64
	if ss.Size > 0 {
		limit = max(ss.Size-staged, 0)
		if n := expectedLength(r); n > limit {
			return 0, errs.Errorf(op, errs.Invalid, "the part has %d bytes; the upload announced %d, %d of them sent", n, ss.Size, staged)
		}
		return limit, nil
	}
	q, err := h.D.QuotaOf(ctx, u.ID)
	if err != nil {
		return 0, err
	}
	free := q.Free()
	if free < 0 {
		return -1, nil
	}
	limit = max(free-staged, 0)
	if n := expectedLength(r); n > limit {
		return 0, errs.OverQuota(op, "", limit, n, "")
	}
	return limit, nil
}

// propfindUploads lists upload id and its parts (or the uploads root, id
// "", and the upload folders in it) with the properties the clients read (resourcetype, getcontentlength),
// whatever the request asked: a PROPFIND of an upload is only ever that.
func (h *Handler) propfindUploads(w http.ResponseWriter, id string, parts []drive.SessionPart, folders []string) (int, error) {
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
	for _, f := range folders {
		b = append(b, "<D:response><D:href>"...)
		b = appendPathEscaped(b, base+f+"/")
		b = append(b, "</D:href><D:propstat><D:prop><D:resourcetype><D:collection/></D:resourcetype></D:prop>"...)
		b = append(b, propstatOK...)
		b = append(b, "</D:response>\n"...)
	}
	for _, p := range parts {
		b = append(b, "<D:response><D:href>"...)
		b = appendPathEscaped(b, base+p.Name)
		b = append(b, "</D:href><D:propstat><D:prop><D:resourcetype/><D:getcontentlength>"...)
		b = strconv.AppendInt(b, p.Size, 10)
		b = append(b, "</D:getcontentlength><D:getlastmodified>"...)
		b = p.Touched.UTC().AppendFormat(b, http.TimeFormat)
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
// at the Destination in one commit, and the upload ends.
func (h *Handler) assemble(w http.ResponseWriter, r *http.Request, u meta.User, id string, files *Handler) (int, error) {
	ctx := r.Context()
	dst, err := files.destination(r)
	if err != nil {
		if errors.Is(err, errForeignHost) {
			return http.StatusBadGateway, nil
		}
		return 0, err
	}
	total, err := totalLength(r)
	if err != nil {
		return 0, err
	}
	fsys := &FS{D: h.D, UID: u.ID, Name: u.Name}
	if err := files.confirmWrite(r, fsys, dst); err != nil {
		return 0, err
	}
	mtime, hasMtime := ocMtime(r)
	o := drive.AssembleOptions{Total: total, ModTime: mtime}
	o.WantMD5, o.WantSHA1 = ocChecksum(r)
	node, existed, err := h.D.AssembleSession(ctx, u.ID, id, dst, o, h.D.Now())
	if err != nil {
		return 0, uploadErr(err)
	}
	hd := w.Header()
	hd.Set("ETag", ETag(node))
	setOCHeaders(hd, node)
	if hasMtime {
		hd.Set("X-OC-MTime", "accepted")
	}
	setOCChecksum(hd, node)
	if existed {
		return http.StatusNoContent, nil
	}
	return http.StatusCreated, nil
}
