package server

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"netdisk/api"
	"netdisk/apitype"
	"netdisk/drive"
	"netdisk/errs"
	"netdisk/meta"
	"netdisk/upload"
	"netdisk/vpath"
)

// Writing through a public link from its page: the link-scoped endpoints
// the page's upload Worker (web/static/upload-worker.js, link mode) and its
// rename and delete buttons call (docs/API.md "Uploads through a link").
//
//	POST   /s/{token}/api/init      {name, size, dir?} → a session
//	GET    /s/{token}/api/session   ?uploadId= (resume after a reload)
//	DELETE /s/{token}/api/session   ?uploadId= (cancel)
//	PUT    /s/{token}/api/chunk     ?uploadId=&index=&hash=, the bytes
//	POST   /s/{token}/api/merge     {uploadId, fileHash, fileSha256?}
//	POST   /s/{token}/api/rename    {path, name}   read-write links
//	POST   /s/{token}/api/delete    {path}         read-write links
//
// Every request resolves the token again (a link revoked, expired or
// locked is refused from the next chunk on) and is authorised by the link
// alone: its permission, and the unlock cookie of a password link.
// Cross-origin writes are refused before they get here (guardBrowser), and
// a POST must be JSON, which no other site's page can send without a
// preflight the daemon never grants.
//
// The uploads run the owner's upload sessions (their quota, 507 past it)
// through upload.InitFree and MergeFree: a file never replaces another
// (a taken name gets "name (2).ext"), and an uploader never joins another
// uploader's session. Nothing here says whether any content or name
// exists: there is no patchHash or prove (the bytes of every chunk are
// sent, whatever --instant-upload says), answers carry no path, and a
// session is reached only by its id and only through a link whose folder
// holds its path.
func (s *Server) mountPublicUpload() {
	s.mux.HandleFunc("POST /s/{token}/api/init", s.linkInit)
	s.mux.HandleFunc("GET /s/{token}/api/session", s.linkSession)
	s.mux.HandleFunc("DELETE /s/{token}/api/session", s.linkAbort)
	s.mux.HandleFunc("PUT /s/{token}/api/chunk", s.linkChunk)
	s.mux.HandleFunc("POST /s/{token}/api/merge", s.linkMerge)
	s.mux.HandleFunc("POST /s/{token}/api/rename", s.linkRename)
	s.mux.HandleFunc("POST /s/{token}/api/delete", s.linkDelete)
}

// linkWriter resolves the request's link for a write: unlocked, and
// allowing uploads (rw: also rename and delete). On failure it has
// answered.
func (s *Server) linkWriter(w http.ResponseWriter, r *http.Request, rw bool) (drive.PublicLink, bool) {
	publicHeaders(w, "")
	if err := api.RequireJSON(r); err != nil {
		s.linkError(w, r, err)
		return drive.PublicLink{}, false
	}
	token := r.PathValue("token")
	pl, err := s.resolveToken(w, r, token)
	if err == errThrottled {
		return pl, false
	}
	if err == nil && !unlocked(r, pl.Link, token) {
		err = drive.ErrNoLink // a locked link is, to this request, none
	}
	if err != nil {
		s.linkError(w, r, err)
		return pl, false
	}
	switch {
	case s.api.Upload == nil:
		err = errs.Errorf("server.link", errs.Unavailable, "the upload service is not running")
	case pl.Perm == meta.LinkReadWrite:
	case pl.Perm == meta.LinkUpload && !rw:
	default:
		err = errs.Errorf("server.link", errs.Permission, "this link does not allow that")
	}
	if err != nil {
		s.linkError(w, r, err)
		return pl, false
	}
	return pl, true
}

// linkPath is the owner's path of rel (relative to the link's folder),
// and whether it is the folder itself.
func linkPath(pl drive.PublicLink, rel string) (string, bool, error) {
	c, err := vpath.CleanRel(rel)
	if err == nil && c != "" {
		// What every path of the drive must be, too (control characters,
		// over-long names).
		_, err = vpath.Clean("/" + c)
	}
	if err != nil {
		return "", false, errs.E("server.link", errs.Invalid, "", errors.New("bad path"))
	}
	if c == "" {
		return pl.Root.Path, true, nil
	}
	return vpath.Join(pl.Root.Path, c), false, nil
}

// linkSessionOf loads the session id for pl: one whose path is below the
// link's folder, else the answer an unknown id gets.
func (s *Server) linkSessionOf(r *http.Request, pl drive.PublicLink, id string) (upload.Info, error) {
	info, err := s.api.Upload.Get(r.Context(), pl.Owner.ID, id)
	if err == nil && !vpath.IsBelow(info.Path, pl.Root.Path) {
		err = errs.E("server.link", errs.NotFound, "", errors.New("unknown or expired upload session"))
	}
	return info, err
}

func linkSession(in upload.Info) apitype.Session {
	return apitype.Session{UploadID: in.UploadID, ChunkSize: in.ChunkSize, TotalChunks: in.TotalChunks, Uploaded: in.Uploaded}
}

func (s *Server) linkInit(w http.ResponseWriter, r *http.Request) {
	pl, ok := s.linkWriter(w, r, false)
	if !ok {
		return
	}
	var req apitype.LinkInit
	if err := api.ReadJSON(r, &req); err != nil {
		s.linkError(w, r, err)
		return
	}
	if req.Dir != "" && pl.Perm != meta.LinkReadWrite {
		// A file drop has no folders to choose from.
		s.linkError(w, r, errs.Errorf("server.link", errs.Invalid, "a file drop takes files into its folder only"))
		return
	}
	dir, _, err := linkPath(pl, req.Dir)
	if err != nil {
		s.linkError(w, r, err)
		return
	}
	info, err := s.api.Upload.InitFree(r.Context(), pl.Owner.ID, dir, req.Name, req.Size)
	if errs.Is(err, errs.Invalid) {
		err = errs.Errorf("server.link", errs.Invalid, "%s", badName)
	}
	if err != nil {
		s.linkError(w, r, err)
		return
	}
	s.log.Info("public link upload", "link", pl.ID, "owner", pl.Owner.ID, "size", req.Size, "addr", clientIP(r))
	api.WriteJSON(w, http.StatusOK, linkSession(info))
}

// badName is why a name is refused: the rules of every path of the drive.
const badName = "a file name must be one name: no '/', no control characters, not '.' or '..', at most 255 bytes"

func (s *Server) linkSession(w http.ResponseWriter, r *http.Request) {
	pl, ok := s.linkWriter(w, r, false)
	if !ok {
		return
	}
	info, err := s.linkSessionOf(r, pl, r.URL.Query().Get("uploadId"))
	if err != nil {
		s.linkError(w, r, err)
		return
	}
	api.WriteJSON(w, http.StatusOK, linkSession(info))
}

func (s *Server) linkAbort(w http.ResponseWriter, r *http.Request) {
	pl, ok := s.linkWriter(w, r, false)
	if !ok {
		return
	}
	id := r.URL.Query().Get("uploadId")
	if _, err := s.linkSessionOf(r, pl, id); err != nil {
		s.linkError(w, r, err)
		return
	}
	if err := s.api.Upload.Abort(r.Context(), pl.Owner.ID, id); err != nil {
		s.linkError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) linkChunk(w http.ResponseWriter, r *http.Request) {
	pl, ok := s.linkWriter(w, r, false)
	if !ok {
		return
	}
	q := r.URL.Query()
	idx, err := strconv.ParseInt(q.Get("index"), 10, 64)
	if err != nil {
		s.linkError(w, r, errs.Errorf("server.link", errs.Invalid, "index must be an integer"))
		return
	}
	id := q.Get("uploadId")
	if _, err := s.linkSessionOf(r, pl, id); err != nil {
		s.linkError(w, r, err)
		return
	}
	// The service bounds the body by the chunk's length itself.
	if err := s.api.Upload.PutChunk(r.Context(), pl.Owner.ID, id, idx, q.Get("hash"), r.Body, r.ContentLength); err != nil {
		s.linkError(w, r, err)
		return
	}
	api.WriteJSON(w, http.StatusOK, apitype.ChunkReceived{Index: idx})
}

func (s *Server) linkMerge(w http.ResponseWriter, r *http.Request) {
	pl, ok := s.linkWriter(w, r, false)
	if !ok {
		return
	}
	var req apitype.LinkMerge
	if err := api.ReadJSON(r, &req); err != nil {
		s.linkError(w, r, err)
		return
	}
	if _, err := s.linkSessionOf(r, pl, req.UploadID); err != nil {
		s.linkError(w, r, err)
		return
	}
	res, err := s.api.Upload.MergeFree(r.Context(), pl.Owner.ID, req.UploadID, req.FileHash, req.FileSHA256)
	if err != nil {
		s.linkError(w, r, err)
		return
	}
	s.log.Info("public link upload merged", "link", pl.ID, "owner", pl.Owner.ID, "size", res.Size)
	api.WriteJSON(w, http.StatusOK, apitype.LinkUploaded{Size: res.Size, FileHash: res.FileHash})
}

func (s *Server) linkRename(w http.ResponseWriter, r *http.Request) {
	pl, ok := s.linkWriter(w, r, true)
	if !ok {
		return
	}
	var req apitype.LinkRename
	if err := api.ReadJSON(r, &req); err != nil {
		s.linkError(w, r, err)
		return
	}
	from, root, err := linkPath(pl, req.Path)
	if err == nil && root {
		err = errs.Errorf("server.link", errs.Permission, "the link's folder itself cannot be renamed")
	}
	if err == nil {
		if c, cerr := vpath.Clean("/" + req.Name); cerr != nil || c != "/"+req.Name || strings.Contains(req.Name, "/") {
			err = errs.Errorf("server.link", errs.Invalid, "%s", badName)
		}
	}
	if err == nil {
		err = s.d.Move(r.Context(), pl.Owner.ID, from, vpath.Join(vpath.Parent(from), req.Name), false)
	}
	if err != nil {
		s.linkError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) linkDelete(w http.ResponseWriter, r *http.Request) {
	pl, ok := s.linkWriter(w, r, true)
	if !ok {
		return
	}
	var req apitype.LinkDelete
	if err := api.ReadJSON(r, &req); err != nil {
		s.linkError(w, r, err)
		return
	}
	p, root, err := linkPath(pl, req.Path)
	if err == nil && root {
		err = errs.Errorf("server.link", errs.Permission, "the link's folder itself cannot be deleted")
	}
	if err == nil {
		// To the owner's trash, as the owner's own delete.
		err = s.d.Remove(r.Context(), pl.Owner.ID, p)
	}
	if err != nil {
		s.linkError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// linkError answers err as the API does ({"error", "code"}, the status of
// its kind) but with a sentence of its own per kind: the drive's messages
// name the owner's paths and, for the quota, the owner's free bytes, none
// of which is an anonymous uploader's to read.
func (s *Server) linkError(w http.ResponseWriter, r *http.Request, err error) {
	kind := errs.KindOf(err)
	status := errs.HTTPStatus(kind)
	msg := ""
	switch kind {
	case errs.NotFound:
		msg = "no such link, or the upload ended: start it again"
	case errs.Invalid:
		msg = "bad request"
	case errs.Quota:
		msg = "the folder's owner has no room left for this file"
	case errs.Permission:
		msg = "this link does not allow that"
	case errs.Exists:
		msg = "that name is taken"
	case errs.NotDir, errs.NoParent, errs.IsDir:
		msg = "no such folder"
	case errs.Mismatch:
		msg = "the file changed while it was being uploaded"
	case errs.TooLarge:
		msg = "too large"
	case errs.Conflict:
		msg = "the upload is not complete"
	case errs.Locked:
		msg = "the folder is locked: try again later"
	case errs.Throttled, errs.TooMany:
		msg = "too many requests: try again later"
	default:
		msg = "the drive cannot answer now: try again later"
	}
	// This edge's own refusals, and the request's shape (api.ReadJSON),
	// say nothing of the owner's tree: their own words are kept.
	var e *errs.Error
	if errors.As(err, &e) && (e.Op == "server.link" || strings.HasPrefix(e.Op, "api.")) && e.Kind == kind {
		msg = errs.Message(err)
	}
	if status >= 500 && status != http.StatusInsufficientStorage {
		s.log.Warn("public link write", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	body := apitype.Error{Error: msg, Code: errs.Code(err)}
	var miss *upload.MissingError
	if errors.As(err, &miss) {
		body.Missing = miss.Missing
	}
	errs.SetErrorHeaders(w.Header(), status)
	api.WriteJSON(w, status, body)
}
