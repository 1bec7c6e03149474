package api

import (
	"net/http"
	"strconv"

	"netdisk/apitype"
	"netdisk/errs"
	"netdisk/meta"
	"netdisk/vpath"
)

// trashRoutes are the signed-in user's trash (docs/API.md "Trash").
func (a *API) trashRoutes() []Route {
	return []Route{
		{Pattern: "GET /api/v1/trash", Handler: a.listTrash},
		{Pattern: "POST /api/v1/trash/restore", Handler: a.restoreTrash},
		{Pattern: "DELETE /api/v1/trash/{id}", Handler: a.expungeTrash},
		{Pattern: "DELETE /api/v1/trash", Handler: a.emptyTrash},
	}
}

// Trash pages: the default and the most items one answer holds.
const (
	defaultTrashPage = 100
	maxTrashPage     = 1000
)

func apiTrashItem(it meta.TrashItem, by string) apitype.TrashItem {
	return apitype.TrashItem{ID: it.ID, Path: it.Path, Name: vpath.Base(it.Path), IsDir: it.IsDir, Size: it.Size,
		Deleted: it.Deleted.UTC(), DeletedBy: by}
}

// queryInt reads a non-negative integer query parameter (def when absent).
func queryInt(r *http.Request, name string, def int64) (int64, error) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, errs.Errorf("api.Trash", errs.Invalid, "%s=%q: want a non-negative integer", name, s)
	}
	return n, nil
}

func (a *API) listTrash(w http.ResponseWriter, r *http.Request, u meta.User) {
	limit, err := queryInt(r, "limit", defaultTrashPage)
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	before, err := queryInt(r, "before", 0)
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	limit = min(max(limit, 1), maxTrashPage)
	// One more than the page says whether there is a next one.
	its, err := a.D.TrashList(r.Context(), u.ID, before, int(limit)+1)
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	out := apitype.TrashList{Items: make([]apitype.TrashItem, 0, len(its))}
	if len(its) > int(limit) {
		its = its[:limit]
		out.Next = its[len(its)-1].ID
	}
	for _, it := range its {
		// A user deletes in their own tree only: the deleter is the owner.
		out.Items = append(out.Items, apiTrashItem(it, u.Name))
	}
	WriteJSON(w, http.StatusOK, out)
}

func (a *API) restoreTrash(w http.ResponseWriter, r *http.Request, u meta.User) {
	var req apitype.TrashRestore
	if err := ReadJSON(r, &req); err != nil {
		a.WriteError(w, r, err)
		return
	}
	ctx := r.Context()
	id := req.ID
	switch {
	case id != 0 && req.Path != "":
		a.WriteError(w, r, errs.Errorf("api.RestoreTrash", errs.Invalid, "give an item's id or its path, not both"))
		return
	case id == 0 && req.Path == "":
		a.WriteError(w, r, errs.Errorf("api.RestoreTrash", errs.Invalid, "give the id or the path of the item to restore"))
		return
	case id == 0:
		it, err := a.D.TrashItemAt(ctx, u.ID, req.Path)
		if err != nil {
			a.WriteError(w, r, err)
			return
		}
		id = it.ID
	}
	it, err := a.D.TrashItem(ctx, u.ID, id)
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	dst, err := a.D.RestoreTrash(ctx, u.ID, id)
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	a.Log.Info("trash: restored", "user", u.Name, "item", id, "path", dst)
	WriteJSON(w, http.StatusOK, apitype.TrashRestored{ID: id, Path: dst, Original: it.Path, Renamed: dst != it.Path})
}

func (a *API) expungeTrash(w http.ResponseWriter, r *http.Request, u meta.User) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		// Not a number names no item: the same answer as an unknown one.
		a.WriteError(w, r, errs.Errorf("api.ExpungeTrash", errs.NotFound, "no such item in the trash"))
		return
	}
	if err := a.D.ExpungeTrash(r.Context(), u.ID, id); err != nil {
		a.WriteError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (a *API) emptyTrash(w http.ResponseWriter, r *http.Request, u meta.User) {
	n, err := a.D.EmptyTrash(r.Context(), u.ID)
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	a.Log.Info("trash: emptied", "user", u.Name, "items", n)
	WriteJSON(w, http.StatusOK, apitype.TrashEmptied{Deleted: n})
}
