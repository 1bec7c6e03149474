package api

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"netdisk/apitype"
	"netdisk/chunker"
	"netdisk/drive"
	"netdisk/errs"
	"netdisk/internal/bytesize"
	"netdisk/meta"
	"netdisk/upload"
	"netdisk/vpath"
)

// uploadRoutes are the endpoints of shared/API.md over the upload service.
func (a *API) uploadRoutes() []Route {
	return []Route{
		{Pattern: "POST /api/v1/file/init", Handler: a.withUpload(a.uploadInit)},
		{Pattern: "POST /api/v1/file/patchHash", Handler: a.withUpload(a.patchHash)},
		{Pattern: "POST /api/v1/file/prove", Handler: a.withUpload(a.prove)},
		{Pattern: "PUT /api/v1/file/uploadChunk", Handler: a.withUpload(a.uploadChunk)},
		{Pattern: "POST /api/v1/file/merge", Handler: a.withUpload(a.merge)},
		{Pattern: "GET /api/v1/file/session", Handler: a.withUpload(a.getSession)},
		{Pattern: "DELETE /api/v1/file/session", Handler: a.withUpload(a.deleteSession)},
		{Pattern: "GET /api/v1/file/sessions", Handler: a.withUpload(a.listSessions)},
		{Pattern: "PUT /api/v1/file/upload", Handler: a.smallUpload},
	}
}

// withUpload serves h when this server runs the upload service.
func (a *API) withUpload(h Handler) Handler {
	return a.withService(func() bool { return a.Upload != nil }, "api.upload", "the upload service is not running", h)
}

func (a *API) uploadInit(w http.ResponseWriter, r *http.Request, u meta.User) {
	var req apitype.InitRequest
	if err := ReadJSON(r, &req); err != nil {
		a.WriteError(w, r, err)
		return
	}
	if req.Path == nil || req.Size == nil {
		a.WriteError(w, r, errs.Errorf("api.Init", errs.Invalid, "path and size are required"))
		return
	}
	info, err := a.Upload.Init(r.Context(), u.ID, *req.Path, *req.Size, req.FileHash)
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	WriteJSON(w, http.StatusOK, sessionOf(info))
}

func sessionOf(in upload.Info) apitype.Session {
	return apitype.Session{UploadID: in.UploadID, ChunkSize: in.ChunkSize, TotalChunks: in.TotalChunks, Uploaded: in.Uploaded}
}

func challengeOf(c *upload.Challenge) *apitype.Challenge {
	if c == nil {
		return nil
	}
	return &apitype.Challenge{Nonce: c.Nonce, Ranges: c.Ranges}
}

// patchHash is one call with two uses: with index it asks about a chunk,
// without it about the whole file.
func (a *API) patchHash(w http.ResponseWriter, r *http.Request, u meta.User) {
	var req apitype.PatchHashRequest
	if err := ReadJSON(r, &req); err != nil {
		a.WriteError(w, r, err)
		return
	}
	var res upload.HashResult
	var err error
	switch {
	case req.Index != nil:
		res, err = a.Upload.PatchChunk(r.Context(), u.ID, req.UploadID, *req.Index, req.Hash, req.SHA256)
	case req.FileHash != "":
		res, err = a.Upload.PatchFile(r.Context(), u.ID, req.UploadID, req.FileHash, req.FileSHA256)
	default:
		err = errs.Errorf("api.PatchHash", errs.Invalid, "give index and hash (a chunk) or fileHash (the file)")
	}
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	WriteJSON(w, http.StatusOK, apitype.PatchHashResult{Exists: res.Exists, Completed: res.Completed, Path: res.Path, Challenge: challengeOf(res.Challenge)})
}

func (a *API) prove(w http.ResponseWriter, r *http.Request, u meta.User) {
	var req apitype.ProveRequest
	if err := ReadJSON(r, &req); err != nil {
		a.WriteError(w, r, err)
		return
	}
	res, err := a.Upload.Prove(r.Context(), u.ID, req.UploadID, req.Index, req.Nonce, req.Proof)
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	WriteJSON(w, http.StatusOK, apitype.ProveResult{OK: res.OK, Completed: res.Completed, Path: res.Path})
}

func (a *API) uploadChunk(w http.ResponseWriter, r *http.Request, u meta.User) {
	q := r.URL.Query()
	idx, err := strconv.ParseInt(q.Get("index"), 10, 64)
	if err != nil {
		a.WriteError(w, r, errs.Errorf("api.UploadChunk", errs.Invalid, "index must be an integer"))
		return
	}
	// The service bounds the body by the chunk's length itself.
	body := requestBody(r, -1, "the chunk body")
	err = a.Upload.PutChunk(r.Context(), u.ID, q.Get("uploadId"), idx, q.Get("hash"), body, r.ContentLength)
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	WriteJSON(w, http.StatusOK, apitype.ChunkReceived{Index: idx})
}

func fileResult(res upload.Result) apitype.FileResult {
	return apitype.FileResult{Path: res.Path, Size: res.Size, FileHash: res.FileHash}
}

func (a *API) merge(w http.ResponseWriter, r *http.Request, u meta.User) {
	var req apitype.MergeRequest
	if err := ReadJSON(r, &req); err != nil {
		a.WriteError(w, r, err)
		return
	}
	res, err := a.Upload.Merge(r.Context(), u.ID, req.UploadID, req.FileHash, req.FileSHA256)
	var miss *upload.MissingError
	if errors.As(err, &miss) {
		body := ErrorBody(err)
		body.Missing = miss.Missing
		WriteJSON(w, http.StatusConflict, body)
		return
	}
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	WriteJSON(w, http.StatusOK, fileResult(res))
}

func (a *API) getSession(w http.ResponseWriter, r *http.Request, u meta.User) {
	info, err := a.Upload.Get(r.Context(), u.ID, r.URL.Query().Get("uploadId"))
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	WriteJSON(w, http.StatusOK, sessionOf(info))
}

// listSessions lists the caller's open sessions, so a client can find and
// abort the ones an interrupted upload left reserving quota.
func (a *API) listSessions(w http.ResponseWriter, r *http.Request, u meta.User) {
	open, err := a.Upload.List(r.Context(), u.ID)
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	out := apitype.OpenUploads{Sessions: make([]apitype.OpenUpload, len(open))}
	for i, o := range open {
		out.Sessions[i] = apitype.OpenUpload{UploadID: o.UploadID, Path: o.Path, Size: o.Size, Received: o.Received,
			Touched: apitype.Time{Time: o.Touched.UTC()}, Expires: apitype.Time{Time: o.Expires.UTC()}}
	}
	WriteJSON(w, http.StatusOK, out)
}

func (a *API) deleteSession(w http.ResponseWriter, r *http.Request, u meta.User) {
	if err := a.Upload.Abort(r.Context(), u.ID, r.URL.Query().Get("uploadId")); err != nil {
		a.WriteError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// smallUpload stores a whole small file in one request: drive.PutFile, the
// same streaming writer as WebDAV PUT, with missing parent folders created
// as merge does.
//
// With fileHash and fileSha256 (an extension, docs/API.md): when the user
// already holds a file of that hash, SHA-256 name and the announced size,
// the new version is committed from it and the answer goes out before the
// body is read (PutFile does not read it), so a client that sent
// Expect: 100-continue never sends it. Otherwise the body is read and must
// hash to fileHash (422 when not).
func (a *API) smallUpload(w http.ResponseWriter, r *http.Request, u meta.User) {
	const op = "api.Upload"
	p, err := vpath.Clean(r.URL.Query().Get("path"))
	if err != nil {
		a.WriteError(w, r, errs.E(op, errs.Invalid, r.URL.Query().Get("path"), err))
		return
	}
	fileHash, fileSHA := r.URL.Query().Get("fileHash"), r.URL.Query().Get("fileSha256")
	if fileHash != "" && !chunker.ValidHash(fileHash) {
		a.WriteError(w, r, errs.Errorf(op, errs.Invalid, "fileHash must be 32 lowercase hex digits"))
		return
	}
	if fileSHA != "" && (fileHash == "" || !chunker.ValidSHA256(fileSHA)) {
		a.WriteError(w, r, errs.Errorf(op, errs.Invalid, "fileSha256 must be 64 lowercase hex digits, given with fileHash"))
		return
	}
	mtime, mode, err := uploadAttrs(r.URL.Query())
	if err != nil {
		a.WriteError(w, r, errs.E(op, errs.Invalid, p, err))
		return
	}
	limit := int64(chunker.SmallFileLimit)
	if r.ContentLength > limit {
		a.WriteError(w, r, errs.Errorf(op, errs.TooLarge, "%s is over the %s limit of one-request uploads: use init/uploadChunk/merge", bytesize.Format(r.ContentLength), bytesize.Format(limit)))
		return
	}
	o := drive.PutOptions{Size: r.ContentLength, FileHash: fileHash, FileSHA256: fileSHA, ModTime: mtime, Mode: mode}
	// The body's read errors come marked (too large, unreadable, client
	// gone).
	node, instant, err := a.D.PutFile(r.Context(), u.ID, p, o, requestBody(r, limit, "the body of a one-request upload"))
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	res := nodeResult(node)
	res.Instant = instant
	WriteJSON(w, http.StatusOK, res)
}

// nodeResult is the one-request upload's answer for the version committed.
func nodeResult(n meta.Node) apitype.FileResult {
	perm := n.Perm()
	return apitype.FileResult{Path: n.Path, Size: n.Size, FileHash: n.FileHash, MTime: &apitype.Time{Time: n.ModTime.UTC()}, Mode: &perm}
}

// uploadAttrs reads the one-request upload's optional attributes: mtime
// (RFC 3339, nanoseconds allowed) and mode (permission bits as a decimal
// number, at most 4095 = 0o7777; 0 is a real 000). Absent means the
// defaults: now, and the old version's mode (or 0644).
func uploadAttrs(q url.Values) (mtime time.Time, mode *uint32, err error) {
	if v := q.Get("mtime"); v != "" {
		if mtime, err = time.Parse(time.RFC3339Nano, v); err != nil {
			return time.Time{}, nil, fmt.Errorf("mtime must be RFC 3339 (e.g. 2026-01-02T15:04:05.123456789Z): %q", v)
		}
	}
	if v := q.Get("mode"); v != "" {
		m, perr := strconv.ParseUint(v, 10, 32)
		if perr != nil || m > uint64(meta.PermBits) {
			return time.Time{}, nil, fmt.Errorf("mode must be a decimal number from 0 to 4095 (0o7777): %q", v)
		}
		perm := uint32(m)
		mode = &perm
	}
	return mtime, mode, nil
}
