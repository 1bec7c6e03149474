package api_test

import (
	"net/url"
	"testing"
	"time"

	"netdisk/apitype"
)

// TestOneRequestUploadAttrs: the one-request upload stores mtime and mode
// given as parameters in the same commit, answers with the version's mtime
// and mode, and refuses malformed ones with 400 before storing anything.
func TestOneRequestUploadAttrs(t *testing.T) {
	x := start(t)
	x.addUser("ann", 0)
	up := func(q url.Values, body string, out any) int {
		return x.call("ann", "PUT", "/api/v1/file/upload?"+q.Encode(), body, out)
	}
	stat := func(p string) apitype.Node {
		var n apitype.Node
		if st := x.call("ann", "GET", "/api/v1/fs/stat?path="+url.QueryEscape(p), nil, &n); st != 200 {
			t.Fatalf("stat %s: %d", p, st)
		}
		return n
	}
	mt := time.Date(2021, 3, 4, 5, 6, 7, 891011121, time.UTC)
	cases := []struct {
		name        string
		mtime, mode string
		wantMTime   time.Time // zero: about now
		wantMode    uint32
	}{
		{"both", mt.Format(time.RFC3339Nano), "384", mt, 0o600},
		{"mode 000 is kept as 000", "", "0", time.Time{}, 0},
		{"mtime only keeps the default mode", "2021-03-04T06:06:07+01:00", "", mt.Truncate(time.Second), 0o644},
		{"setuid bits are only stored", "", "3565", time.Time{}, 0o6755},
	}
	for i, c := range cases {
		p := "/f" + string(rune('a'+i))
		q := url.Values{"path": {p}}
		if c.mtime != "" {
			q.Set("mtime", c.mtime)
		}
		if c.mode != "" {
			q.Set("mode", c.mode)
		}
		before := time.Now().Add(-time.Second)
		var res apitype.FileResult
		if st := up(q, "content "+c.name, &res); st != 200 {
			t.Fatalf("%s: %d", c.name, st)
		}
		n := stat(p)
		if c.wantMTime.IsZero() {
			if n.MTime.Before(before) {
				t.Errorf("%s: mtime %v, want now", c.name, n.MTime)
			}
		} else if !n.MTime.Equal(c.wantMTime) {
			t.Errorf("%s: mtime %v, want %v", c.name, n.MTime, c.wantMTime)
		}
		if n.Mode != c.wantMode {
			t.Errorf("%s: mode %o, want %o", c.name, n.Mode, c.wantMode)
		}
		if res.MTime == nil || !res.MTime.Equal(n.MTime.Time) || res.Mode == nil || *res.Mode != n.Mode {
			t.Errorf("%s: the answer says mtime %v mode %v, the node %v %o", c.name, res.MTime, res.Mode, n.MTime, n.Mode)
		}
	}
	// A new version without attributes keeps the stored mode.
	if st := up(url.Values{"path": {"/fa"}}, "again", nil); st != 200 || stat("/fa").Mode != 0o600 {
		t.Fatalf("a new version changed the mode: %d, %o", st, stat("/fa").Mode)
	}
	for _, bad := range []url.Values{
		{"mtime": {"yesterday"}}, {"mtime": {"1614834367"}}, {"mode": {"4096"}}, {"mode": {"-1"}}, {"mode": {"0o644"}},
	} {
		bad.Set("path", "/bad")
		if st := up(bad, "x", nil); st != 400 {
			t.Errorf("%v: %d, want 400", bad, st)
		}
	}
	if x.call("ann", "GET", "/api/v1/fs/stat?path=/bad", nil, nil) != 404 {
		t.Error("a refused upload stored a file")
	}
}
