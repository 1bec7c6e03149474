package davlock

import (
	"context"
	"net/http"
	"reflect"
	"testing"
	"time"

	"netdisk/errs"
	"netdisk/testutil"
)

func TestHeaderTokens(t *testing.T) {
	for _, c := range []struct {
		ifh, lt string
		want    []string
		bad     bool
	}{
		{ifh: "(<opaquelocktoken:a>)", want: []string{"opaquelocktoken:a"}},
		{ifh: `<http://h/dav/x> (<opaquelocktoken:a> ["etag"]) (Not <opaquelocktoken:b>) (<DAV:no-lock>)`, want: []string{"opaquelocktoken:a", "DAV:no-lock"}},
		{lt: "<opaquelocktoken:c>", want: []string{"opaquelocktoken:c"}},
		{ifh: "(<opaquelocktoken:a>)", lt: " <opaquelocktoken:c> ", want: []string{"opaquelocktoken:a", "opaquelocktoken:c"}},
		{ifh: "(<opaquelocktoken:a>", bad: true},
		{ifh: "opaquelocktoken:a", bad: true},
		{ifh: "(<>)", bad: true},
		{lt: "opaquelocktoken:c", bad: true},
	} {
		h := http.Header{}
		if c.ifh != "" {
			h.Set("If", c.ifh)
		}
		if c.lt != "" {
			h.Set("Lock-Token", c.lt)
		}
		got, err := HeaderTokens(h)
		if c.bad {
			if !errs.Is(err, errs.Invalid) {
				t.Errorf("If %q Lock-Token %q: %v %v, want Invalid", c.ifh, c.lt, got, err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("If %q Lock-Token %q: %q %v, want %q", c.ifh, c.lt, got, err, c.want)
		}
	}
}

// TestCheck: the rule every surface applies. Tokens come from the context.
func TestCheck(t *testing.T) {
	clock := testutil.NewClock(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	m := NewManager(clock.Now)
	f, _ := m.Create(1, Lock{Root: "/d/f"})
	p, _ := m.Create(1, Lock{Root: "/p"}) // depth 0 on a folder
	tokens := func(ts ...string) []string { return Tokens(WithTokens(context.Background(), ts)) }
	for _, c := range []struct {
		uid    int64
		tokens []string
		target Target
		locked bool
	}{
		{1, nil, Target{Path: "/d/f"}, true},
		{1, tokens(f.Token), Target{Path: "/d/f"}, false},
		{1, tokens(p.Token), Target{Path: "/d/f"}, true},
		{2, nil, Target{Path: "/d/f"}, false}, // another user's table
		{1, nil, Target{Path: "/d"}, false},
		{1, nil, Target{Path: "/d", Deep: true}, true}, // a locked member
		{1, tokens(f.Token), Target{Path: "/d", Deep: true, Membership: true}, false},
		{1, nil, Target{Path: "/p/new"}, false},
		{1, nil, Target{Path: "/p/new", Membership: true}, true}, // depth 0 guards membership
		{1, tokens(p.Token), Target{Path: "/p/new", Membership: true}, false},
	} {
		err := Check(m, c.uid, c.tokens, c.target)
		if errs.Is(err, errs.Locked) != c.locked || (err != nil && !errs.Is(err, errs.Locked)) {
			t.Errorf("uid %d tokens %v %+v: %v, locked want %v", c.uid, c.tokens, c.target, err, c.locked)
		}
	}
	clock.Advance(MaxLockTimeout)
	if err := Check(m, 1, nil, Target{Path: "/d/f"}); err != nil {
		t.Errorf("after expiry: %v", err)
	}
}
