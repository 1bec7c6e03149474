package api

import (
	"net/http"
	"strconv"

	"netdisk/apitype"
	"netdisk/drive"
	"netdisk/errs"
	"netdisk/meta"
)

func (a *API) searchRoutes() []Route {
	return []Route{{Pattern: "GET /api/v1/search", Handler: a.search}}
}

// search answers GET /api/v1/search?q=&glob=1&under=&limit=&cursor=: the
// user's files and folders whose names match q (drive.Search).
func (a *API) search(w http.ResponseWriter, r *http.Request, u meta.User) {
	const op = "api.search"
	v := r.URL.Query()
	q := drive.SearchQuery{Pattern: v.Get("q"), Under: v.Get("under"), Cursor: v.Get("cursor")}
	switch g := v.Get("glob"); g {
	case "", "0", "false":
	case "1", "true":
		q.Glob = true
	default:
		a.WriteError(w, r, errs.Errorf(op, errs.Invalid, "glob=%q: want 1 or 0", g))
		return
	}
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			a.WriteError(w, r, errs.Errorf(op, errs.Invalid, "limit=%q: want 1..%d", s, drive.MaxSearchLimit))
			return
		}
		q.Limit = n
	}
	page, err := a.D.Search(r.Context(), u.ID, q)
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	out := apitype.SearchResult{Hits: make([]apitype.Node, len(page.Hits)), Next: page.Next}
	for i, n := range page.Hits {
		out.Hits[i] = NodeOf(n)
	}
	WriteJSON(w, http.StatusOK, out)
}
