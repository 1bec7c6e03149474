package api

import (
	"errors"
	"net/http"

	"netdisk/apitype"
	"netdisk/errs"
	"netdisk/meta"
)

// chunkRoutes expose a file's chunk list, so the FUSE mount can fetch only the
// chunks a read touches and cache them by content.
func (a *API) chunkRoutes() []Route {
	return []Route{
		{Pattern: "GET /api/v1/fs/chunks", Handler: a.fileChunks},
		{Pattern: "POST /api/v1/fs/setattr", Handler: a.setAttr},
		{Pattern: "POST /api/v1/fs/setmtime", Handler: a.setAttr},
	}
}

// setAttr answers POST /api/v1/fs/setattr {"path", "mtime"? (RFC 3339),
// "mode"? (permission bits as a number, ≤ 0o7777)}: tar, rsync -a, cp -p and
// chmod through the mount. POST /api/v1/fs/setmtime is the same call (its
// older name). A request is checked whole before anything changes, so a bad
// mode leaves the mtime alone too. The bits are stored, never acted on.
func (a *API) setAttr(w http.ResponseWriter, r *http.Request, u meta.User) {
	const op = "api.setattr"
	var req apitype.SetAttrRequest
	if err := ReadJSON(r, &req); err != nil {
		a.WriteError(w, r, err)
		return
	}
	switch {
	case req.Path == "":
		a.WriteError(w, r, errs.Errorf(op, errs.Invalid, "path is required"))
		return
	case req.MTime == nil && req.Mode == nil:
		a.WriteError(w, r, errs.Errorf(op, errs.Invalid, "nothing to set: give mtime and/or mode"))
		return
	case req.Mode != nil && *req.Mode&^meta.PermBits != 0:
		a.WriteError(w, r, errs.Errorf(op, errs.Invalid, "mode %#o has bits outside %#o", *req.Mode, meta.PermBits))
		return
	}
	ctx := r.Context()
	if req.Mode != nil {
		if err := a.D.SetMode(ctx, u.ID, req.Path, *req.Mode); err != nil {
			a.WriteError(w, r, err)
			return
		}
	}
	if req.MTime != nil {
		if err := a.D.SetModTime(ctx, u.ID, req.Path, *req.MTime); err != nil {
			a.WriteError(w, r, err)
			return
		}
	}
	a.writeNode(w, r, u, req.Path, http.StatusOK)
}

// fileChunks answers GET /api/v1/fs/chunks?path=P with the current version's
// identity and chunks. Only the authenticated user's tree is consulted.
func (a *API) fileChunks(w http.ResponseWriter, r *http.Request, u meta.User) {
	ctx := r.Context()
	p := r.URL.Query().Get("path")
	n, err := a.D.Stat(ctx, u.ID, p)
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	if n.IsDir {
		a.WriteError(w, r, errs.E("api.fileChunks", errs.IsDir, n.Path, nil))
		return
	}
	if n.IsSymlink() {
		// Its content is its target, in the node (fs/stat), not in chunks.
		a.WriteError(w, r, errs.E("api.fileChunks", errs.Invalid, n.Path, errors.New("a symbolic link has no chunks")))
		return
	}
	cs, err := a.D.FileChunks(ctx, n)
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	out := make([]apitype.Chunk, len(cs))
	for i, c := range cs {
		out[i] = apitype.Chunk{Index: c.Index, Offset: c.Offset, MD5: c.MD5, SHA256: c.SHA256, Size: c.Size}
	}
	WriteJSON(w, http.StatusOK, apitype.ChunkList{Path: n.Path, Size: n.Size, FileHash: n.FileHash,
		ModTime: apitype.Time{Time: n.ModTime}, ChunkSize: a.D.ChunkSize(), Chunks: out})
}
