package api

import (
	"net/http"
	"strconv"

	"netdisk/apitype"
	"netdisk/dav"
	"netdisk/errs"
	"netdisk/meta"
)

// versionRoutes are a file's versions: list, download (Range, as any
// download), restore, delete.
func (a *API) versionRoutes() []Route {
	return []Route{
		{Pattern: "GET /api/v1/versions", Handler: a.versionList},
		{Pattern: "GET /api/v1/versions/content", Handler: a.versionContent},
		{Pattern: "POST /api/v1/versions/restore", Handler: a.versionRestore},
		{Pattern: "DELETE /api/v1/versions", Handler: a.versionDelete},
	}
}

// queryVersion reads ?path= and ?version=.
func queryVersion(r *http.Request) (string, int64, error) {
	p, err := queryPath(r)
	if err != nil {
		return "", 0, err
	}
	raw := r.URL.Query().Get("version")
	vid, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || vid <= 0 {
		return "", 0, errs.Errorf("api.versions", errs.Invalid, "version %q is not a version id", raw)
	}
	return p, vid, nil
}

func (a *API) versionList(w http.ResponseWriter, r *http.Request, u meta.User) {
	p, err := queryPath(r)
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	n, vs, err := a.D.FileVersions(r.Context(), u.ID, p)
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	out := apitype.VersionList{File: NodeOf(n), Versions: make([]apitype.Version, len(vs))}
	names := map[int64]string{u.ID: u.Name}
	for i, v := range vs {
		name, ok := names[v.Author]
		if !ok {
			// An author other than the owner; a deleted one keeps its id.
			name = strconv.FormatInt(v.Author, 10)
			if au, err := a.D.UserByID(r.Context(), v.Author); err == nil {
				name = au.Name
			}
			names[v.Author] = name
		}
		out.Versions[i] = apitype.Version{ID: v.ID, Size: v.Size, MTime: apitype.Time{Time: v.ModTime.UTC()},
			Saved: apitype.Time{Time: v.Saved.UTC()}, FileHash: v.FileHash, Author: name}
	}
	WriteJSON(w, http.StatusOK, out)
}

// versionContent serves a version's bytes the way WebDAV GET serves a file
// (Range, If-Range, the file hash as ETag).
func (a *API) versionContent(w http.ResponseWriter, r *http.Request, u meta.User) {
	p, vid, err := queryVersion(r)
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	rd, v, err := a.D.OpenFileVersion(r.Context(), u.ID, p, vid)
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	defer rd.Close()
	w.Header().Set("ETag", strconv.Quote(v.FileHash))
	w.Header().Set("Content-Type", "application/octet-stream")
	if err := dav.ServeReader(w, r, a.D, rd, "", v.ModTime, a.Log); err != nil {
		a.WriteError(w, r, err)
	}
}

func (a *API) versionRestore(w http.ResponseWriter, r *http.Request, u meta.User) {
	var req apitype.VersionRequest
	if err := ReadJSON(r, &req); err != nil {
		a.WriteError(w, r, err)
		return
	}
	if req.Path == "" || req.Version <= 0 {
		a.WriteError(w, r, errs.Errorf("api.versions", errs.Invalid, "path and version are required"))
		return
	}
	n, err := a.D.RestoreVersion(r.Context(), u.ID, req.Path, req.Version)
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	WriteJSON(w, http.StatusOK, NodeOf(n))
}

func (a *API) versionDelete(w http.ResponseWriter, r *http.Request, u meta.User) {
	p, vid, err := queryVersion(r)
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	if err := a.D.DeleteVersion(r.Context(), u.ID, p, vid); err != nil {
		a.WriteError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
