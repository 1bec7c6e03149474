package api

import (
	"net/http"
	"time"

	"netdisk/errs"
	"netdisk/meta"
)

// chunkRoutes expose a file's chunk list, so the FUSE mount can fetch only the
// chunks a read touches and cache them by content.
func (a *API) chunkRoutes() []Route {
	return []Route{
		{Pattern: "GET /api/v1/fs/chunks", Handler: a.fileChunks},
		{Pattern: "POST /api/v1/fs/setmtime", Handler: a.setMTime},
	}
}

// setMTime answers POST /api/v1/fs/setmtime {"path", "mtime" (RFC 3339)}:
// tar, rsync -a and cp -p set times after writing.
func (a *API) setMTime(w http.ResponseWriter, r *http.Request, u meta.User) {
	var req struct {
		Path  string    `json:"path"`
		MTime time.Time `json:"mtime"`
	}
	if err := ReadJSON(r, &req); err != nil {
		a.WriteError(w, r, err)
		return
	}
	if err := a.D.SetModTime(r.Context(), u.ID, req.Path, req.MTime); err != nil {
		a.WriteError(w, r, err)
		return
	}
	n, err := a.D.Stat(r.Context(), u.ID, req.Path)
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	WriteJSON(w, http.StatusOK, NodeOf(n))
}

// ChunkRef is one chunk of a file as the chunk-list answer gives it.
type ChunkRef struct {
	Index  int64  `json:"index"`
	Offset int64  `json:"offset"`
	MD5    string `json:"md5"`
	Size   int64  `json:"size"`
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
	cs, err := a.D.Meta().FileChunks(ctx, n.ID)
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	out := make([]ChunkRef, len(cs))
	for i, c := range cs {
		out[i] = ChunkRef{Index: c.Index, Offset: c.Offset, MD5: c.MD5, Size: c.Size}
	}
	WriteJSON(w, http.StatusOK, map[string]any{
		"path":      n.Path,
		"size":      n.Size,
		"fileHash":  n.FileHash,
		"modTime":   n.ModTime,
		"chunkSize": a.D.ChunkSize(),
		"chunks":    out,
	})
}
