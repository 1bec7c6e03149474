package api

import (
	"net/http"
	"strconv"

	"netdisk/apitype"
	"netdisk/errs"
	"netdisk/meta"
	"netdisk/vpath"
)

// fsRoutes are the file operations the client and the FUSE mount need.
// Downloads are WebDAV GET /dav/PATH (Range, ETag = file hash).
func (a *API) fsRoutes() []Route {
	return []Route{
		{Pattern: "GET /api/v1/fs/list", Handler: a.fsList},
		{Pattern: "GET /api/v1/fs/stat", Handler: a.fsStat},
		{Pattern: "POST /api/v1/fs/mkdir", Handler: a.fsMkdir},
		{Pattern: "POST /api/v1/fs/symlink", Handler: a.fsSymlink},
		{Pattern: "POST /api/v1/fs/move", Handler: a.fsMove},
		{Pattern: "POST /api/v1/fs/copy", Handler: a.fsCopy},
		{Pattern: "DELETE /api/v1/fs", Handler: a.fsDelete},
	}
}

// NodeOf converts a stored node.
func NodeOf(n meta.Node) apitype.Node {
	return apitype.Node{Path: n.Path, Name: n.Name(), IsDir: n.IsDir, Size: n.Size, Mode: n.Perm(),
		MTime: apitype.Time{Time: n.ModTime.UTC()}, FileHash: n.FileHash, ID: n.ID, Type: n.Kind().String(), Target: n.Target}
}

func queryPath(r *http.Request) (string, error) {
	raw := r.URL.Query().Get("path")
	if raw == "" {
		return "", errs.Errorf("api.fs", errs.Invalid, "path is required")
	}
	p, err := vpath.Clean(raw)
	if err != nil {
		return "", errs.E("api.fs", errs.Invalid, raw, err)
	}
	return p, nil
}

func (a *API) fsStat(w http.ResponseWriter, r *http.Request, u meta.User) {
	p, err := queryPath(r)
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	a.writeNode(w, r, u, p, http.StatusOK)
}

func (a *API) fsMkdir(w http.ResponseWriter, r *http.Request, u meta.User) {
	var req apitype.MkdirRequest
	if err := ReadJSON(r, &req); err != nil {
		a.WriteError(w, r, err)
		return
	}
	ctx := r.Context()
	if req.Mode != nil && *req.Mode&^meta.PermBits != 0 {
		a.WriteError(w, r, errs.Errorf("api.mkdir", errs.Invalid, "mode %#o has bits outside %#o", *req.Mode, meta.PermBits))
		return
	}
	var err error
	status := http.StatusCreated
	if req.Parents && req.Mode != nil {
		// Missing parents get no stored bits; the directory asked for gets
		// the mode, unless it already existed.
		var p string
		if p, err = vpath.Clean(req.Path); err != nil {
			err = errs.E("api.mkdir", errs.Invalid, req.Path, err)
		} else if p != "/" {
			err = a.D.MkdirAll(ctx, u.ID, vpath.Parent(p))
		}
		if err == nil {
			if _, err = a.D.MkdirMode(ctx, u.ID, req.Path, *req.Mode); errs.Is(err, errs.Exists) {
				if n, serr := a.D.Stat(ctx, u.ID, req.Path); serr == nil && n.IsDir {
					status, err = http.StatusOK, nil
				}
			}
		}
	} else if req.Mode != nil {
		_, err = a.D.MkdirMode(ctx, u.ID, req.Path, *req.Mode)
	} else if req.Parents {
		// Like mkdir -p: an existing directory is success.
		if n, serr := a.D.Stat(ctx, u.ID, req.Path); serr == nil && n.IsDir {
			status = http.StatusOK
		}
		err = a.D.MkdirAll(ctx, u.ID, req.Path)
	} else {
		_, err = a.D.Mkdir(ctx, u.ID, req.Path)
	}
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	a.writeNode(w, r, u, req.Path, status)
}

func (a *API) fsSymlink(w http.ResponseWriter, r *http.Request, u meta.User) {
	var req apitype.SymlinkRequest
	if err := ReadJSON(r, &req); err != nil {
		a.WriteError(w, r, err)
		return
	}
	n, err := a.D.Symlink(r.Context(), u.ID, req.Path, req.Target)
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	WriteJSON(w, http.StatusCreated, NodeOf(n))
}

func (a *API) fsMove(w http.ResponseWriter, r *http.Request, u meta.User) {
	a.moveOrCopy(w, r, u, false)
}

func (a *API) fsCopy(w http.ResponseWriter, r *http.Request, u meta.User) {
	a.moveOrCopy(w, r, u, true)
}

func (a *API) moveOrCopy(w http.ResponseWriter, r *http.Request, u meta.User, copying bool) {
	var req apitype.MoveRequest
	if err := ReadJSON(r, &req); err != nil {
		a.WriteError(w, r, err)
		return
	}
	if req.From == "" || req.To == "" {
		a.WriteError(w, r, errs.Errorf("api.fs", errs.Invalid, "from and to are required"))
		return
	}
	ctx := r.Context()
	var err error
	if copying {
		err = a.D.Copy(ctx, u.ID, req.From, req.To, req.Overwrite, req.Recursive == nil || *req.Recursive)
	} else {
		err = a.D.Move(ctx, u.ID, req.From, req.To, req.Overwrite)
	}
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	a.writeNode(w, r, u, req.To, http.StatusOK)
}

// writeNode answers with the node at p as it stands now: what a handler that
// changed or looked up p returns, or p's error if it is gone.
func (a *API) writeNode(w http.ResponseWriter, r *http.Request, u meta.User, p string, status int) {
	n, err := a.D.Stat(r.Context(), u.ID, p)
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	WriteJSON(w, status, NodeOf(n))
}

// fsDelete removes a file, an empty directory, or with recursive=true a
// whole tree.
func (a *API) fsDelete(w http.ResponseWriter, r *http.Request, u meta.User) {
	p, err := queryPath(r)
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	if p == "/" {
		a.WriteError(w, r, errs.Errorf("api.Delete", errs.Permission, "the root cannot be removed"))
		return
	}
	ctx := r.Context()
	recursive, _ := strconv.ParseBool(r.URL.Query().Get("recursive"))
	n, err := a.D.Stat(ctx, u.ID, p)
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	if n.IsDir && !recursive {
		c, err := a.D.CountTree(ctx, u.ID, p, 0)
		if err != nil {
			a.WriteError(w, r, err)
			return
		}
		if c > 0 {
			a.WriteError(w, r, errs.Errorf("api.Delete", errs.NotEmpty, "%s: directory not empty (pass recursive=true)", p))
			return
		}
	}
	if err := a.D.Remove(ctx, u.ID, p); err != nil {
		a.WriteError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
