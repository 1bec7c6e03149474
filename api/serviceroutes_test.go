package api

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"netdisk/apitype"
	"netdisk/meta"
)

// Every route of an optional service that does not run here (locks, async
// downloads) answers 503 with the unavailable code and says which service
// is off, before it reads the request's body.
func TestServiceRoutesAnswerUnavailableWhenOff(t *testing.T) {
	a := New(nil, slog.New(slog.DiscardHandler))
	why := map[string]string{
		"/api/v1/lock/":  "locks are not enabled on this server",
		"/api/v1/async/": "async downloads are not enabled on this server",
	}
	seen := map[string]int{}
	for _, rt := range a.Routes() {
		method, path, _ := strings.Cut(rt.Pattern, " ")
		var want string
		for prefix, w := range why {
			if strings.HasPrefix(path, prefix) {
				want, seen[prefix] = w, seen[prefix]+1
			}
		}
		if want == "" {
			continue
		}
		body := &unread{}
		r := httptest.NewRequest(method, path, body)
		r.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		rt.Handler(w, r, meta.User{ID: 1, Name: "ann"})
		var e apitype.Error
		if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || w.Code != http.StatusServiceUnavailable || e.Code != "unavailable" || !strings.Contains(e.Error, want) {
			t.Errorf("%s: %d %s; want 503 unavailable saying %q", rt.Pattern, w.Code, w.Body, want)
		}
		if body.read {
			t.Errorf("%s: the body was read", rt.Pattern)
		}
	}
	for prefix := range why {
		if seen[prefix] == 0 {
			t.Errorf("no route under %s", prefix)
		}
	}
}

// unread is a request body that records whether it was read.
type unread struct{ read bool }

func (u *unread) Read([]byte) (int, error) { u.read = true; return 0, io.EOF }
