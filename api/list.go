package api

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"

	"netdisk/apitype"
	"netdisk/errs"
	"netdisk/meta"
)

// A listing answer is written entry by entry as the store's pages arrive:
// the daemon holds one page of a folder, never the folder, whatever its
// size. Without limit and cursor (the clients before pages) every entry is
// written in one answer, read from the store a page at a time.

// listCursor is the opaque cursor of the page after the entry named name.
func listCursor(name string) string {
	if name == "" {
		return ""
	}
	return base64.RawURLEncoding.EncodeToString([]byte(name))
}

// cursorName reads a cursor back into the name it continues after.
func cursorName(c string) (string, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || len(b) == 0 {
		return "", errs.Errorf("api.List", errs.Invalid, "cursor %q: not one this server gave", c)
	}
	return string(b), nil
}

func (a *API) fsList(w http.ResponseWriter, r *http.Request, u meta.User) {
	p, err := queryPath(r)
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	q := r.URL.Query()
	paged := q.Has("limit") || q.Has("cursor")
	limit, err := queryInt(r, "limit", apitype.ListPageDefault)
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	if limit < 1 {
		a.WriteError(w, r, errs.Errorf("api.List", errs.Invalid, "limit=0: want 1 or more"))
		return
	}
	limit = min(limit, apitype.ListPageMax)
	after := ""
	if c := q.Get("cursor"); c != "" {
		if after, err = cursorName(c); err != nil {
			a.WriteError(w, r, err)
			return
		}
	}
	if !paged {
		limit = apitype.ListPageMax
	}
	ctx := r.Context()
	// The first page before the status: a missing folder or a file is
	// still a plain error answer.
	ns, next, err := a.D.ListPage(ctx, u.ID, p, after, int(limit))
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	lw := listWriter{bw: bufio.NewWriterSize(w, 32<<10)}
	lw.bw.WriteString(`{"path":`)
	lw.enc = json.NewEncoder(lw.bw)
	lw.enc.Encode(p)
	lw.bw.WriteString(`,"entries":[`)
	for {
		for _, n := range ns {
			if err := lw.entry(NodeOf(n)); err != nil {
				return // the client went away
			}
		}
		if paged || next == "" {
			break
		}
		if ns, next, err = a.D.ListPage(ctx, u.ID, p, next, int(limit)); err != nil {
			// Half an answer is out: cut the connection rather than end
			// it as if the folder ended here.
			if !errors.Is(err, ctx.Err()) {
				a.Log.Warn("api: listing cut short", "path", p, "err", err)
			}
			lw.bw.Flush()
			errs.AbortResponse(w, err)
		}
	}
	lw.bw.WriteString(`]`)
	if paged && next != "" {
		lw.bw.WriteString(`,"next":`)
		lw.enc.Encode(listCursor(next))
	}
	lw.bw.WriteString("}\n")
	lw.bw.Flush()
}

// listWriter writes the entries of a listing answer.
type listWriter struct {
	bw    *bufio.Writer
	enc   *json.Encoder
	count int
}

func (lw *listWriter) entry(n apitype.Node) error {
	if lw.count > 0 {
		lw.bw.WriteByte(',')
	}
	lw.count++
	return lw.enc.Encode(n)
}
