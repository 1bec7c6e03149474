package api

import (
	"net/http"

	"netdisk/apitype"
	"netdisk/meta"
)

func (a *API) quotaRoutes() []Route {
	return []Route{{Pattern: "GET /api/v1/quota", Handler: a.quota}}
}

func (a *API) quota(w http.ResponseWriter, r *http.Request, u meta.User) {
	q, err := a.D.QuotaOf(r.Context(), u.ID)
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	WriteJSON(w, http.StatusOK, apitype.Quota{Total: q.Total, Finished: q.Finished, Unfinished: q.Unfinished,
		Uploading: q.Uploading, Free: q.Free(), Metadata: q.Metadata})
}
