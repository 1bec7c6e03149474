package api

import (
	"net/http"

	"netdisk/meta"
)

// QuotaBody is the answer of GET /api/v1/quota: the user's figures as the
// quota ledger keeps them (seed 001). Total 0 means unlimited, and then Free
// is -1. Free is what a new upload may still declare:
// total - finished - uploading (uploading covers unfinished).
type QuotaBody struct {
	Total      int64 `json:"total"`
	Finished   int64 `json:"finished"`   // sum of the user's file sizes
	Unfinished int64 `json:"unfinished"` // bytes received by open uploads
	Uploading  int64 `json:"uploading"`  // sizes declared by open uploads
	Free       int64 `json:"free"`
}

func (a *API) quotaRoutes() []Route {
	return []Route{{Pattern: "GET /api/v1/quota", Handler: a.quota}}
}

func (a *API) quota(w http.ResponseWriter, r *http.Request, u meta.User) {
	q, err := a.D.QuotaOf(r.Context(), u.ID)
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	WriteJSON(w, http.StatusOK, QuotaBody{Total: q.Total, Finished: q.Finished, Unfinished: q.Unfinished,
		Uploading: q.Uploading, Free: q.Free()})
}
