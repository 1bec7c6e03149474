package davlock

import (
	"fmt"
	"regexp"
	"testing"
	"time"

	"netdisk/errs"
	"netdisk/testutil"
)

// testTable is a Table whose per-user bound tests can lower.
type testTable interface {
	Table
	setMax(n int)
}

func (m *Manager) setMax(n int)    { m.max = n }
func (r *RedisTable) setMax(n int) { r.max = n }

// eachTable runs f on the in-process table and on the Redis one: both
// implement the same rules and pass the same tests. newTable gives a fresh,
// empty table on the shared clock each call.
func eachTable(t *testing.T, f func(t *testing.T, newTable func() testTable, clock *testutil.Clock)) {
	t.Run("memory", func(t *testing.T) {
		clock := testutil.NewClock(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
		f(t, func() testTable { return NewManager(clock.Now) }, clock)
	})
	t.Run("redis", func(t *testing.T) {
		rdb := testutil.StartRedis(t).Client()
		clock := testutil.NewClock(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
		n := 0
		f(t, func() testTable {
			n++
			return NewRedis(rdb, fmt.Sprintf("test%d:", n), clock.Now, nil)
		}, clock)
	})
}

func mustLock(t *testing.T, m Table, uid int64, l Lock) Lock {
	t.Helper()
	got, err := m.Create(uid, l)
	if err != nil {
		t.Fatalf("Create(%d, %+v): %v", uid, l, err)
	}
	return got
}

func TestLockTokenFormat(t *testing.T) { eachTable(t, testLockTokenFormat) }

func testLockTokenFormat(t *testing.T, newTable func() testTable, _ *testutil.Clock) {
	m := newTable()
	a := mustLock(t, m, 1, Lock{Root: "/a"})
	b := mustLock(t, m, 1, Lock{Root: "/b"})
	re := regexp.MustCompile(`^opaquelocktoken:[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	if !re.MatchString(a.Token) || a.Token == b.Token {
		t.Errorf("tokens %q, %q: want distinct random UUID URNs", a.Token, b.Token)
	}
}

func TestLockConflicts(t *testing.T) { eachTable(t, testLockConflicts) }

func testLockConflicts(t *testing.T, newTable func() testTable, _ *testutil.Clock) {
	cases := []struct {
		name     string
		first    Lock
		second   Lock
		conflict bool
	}{
		{"exclusive same", Lock{Root: "/f"}, Lock{Root: "/f"}, true},
		{"shared same", Lock{Root: "/f", Shared: true}, Lock{Root: "/f", Shared: true}, false},
		{"shared then exclusive", Lock{Root: "/f", Shared: true}, Lock{Root: "/f"}, true},
		{"exclusive then shared", Lock{Root: "/f"}, Lock{Root: "/f", Shared: true}, true},
		{"infinity parent covers child", Lock{Root: "/d", Infinite: true}, Lock{Root: "/d/x/y"}, true},
		{"depth-0 parent does not", Lock{Root: "/d"}, Lock{Root: "/d/x"}, false},
		{"infinity new lock over locked child", Lock{Root: "/d/x"}, Lock{Root: "/d", Infinite: true}, true},
		{"depth-0 new lock over locked child", Lock{Root: "/d/x"}, Lock{Root: "/d"}, false},
		{"siblings", Lock{Root: "/d/x", Infinite: true}, Lock{Root: "/d/xy", Infinite: true}, false},
		{"root infinity", Lock{Root: "/", Infinite: true}, Lock{Root: "/a"}, true},
		{"shared infinity both", Lock{Root: "/d", Infinite: true, Shared: true}, Lock{Root: "/d/x", Shared: true}, false},
	}
	for _, c := range cases {
		m := newTable()
		mustLock(t, m, 1, c.first)
		_, err := m.Create(1, c.second)
		if got := errs.Is(err, errs.Locked); got != c.conflict {
			t.Errorf("%s: second lock err = %v, want conflict %v", c.name, err, c.conflict)
		}
		// Another user's identical paths never conflict.
		if _, err := m.Create(2, c.second); err != nil {
			t.Errorf("%s: other user's lock: %v", c.name, err)
		}
	}
}

func TestLockScopeAndTokens(t *testing.T) { eachTable(t, testLockScopeAndTokens) }

func testLockScopeAndTokens(t *testing.T, newTable func() testTable, _ *testutil.Clock) {
	m := newTable()
	d := mustLock(t, m, 1, Lock{Root: "/d", Infinite: true, Owner: "<href xmlns=\"DAV:\">me</href>"})
	f := mustLock(t, m, 1, Lock{Root: "/g"})
	if !m.Holds(1, d.Token, "/d/x/y") || !m.Holds(1, d.Token, "/d") {
		t.Error("depth-infinity lock does not hold on its members")
	}
	if m.Holds(1, d.Token, "/dx") || m.Holds(1, f.Token, "/g/x") {
		t.Error("lock holds outside its scope")
	}
	if m.Holds(2, d.Token, "/d") {
		t.Error("a token holds for another user")
	}
	if got := m.Covering(1, "/d/x"); len(got) != 1 || got[0].Token != d.Token || got[0].Owner != d.Owner {
		t.Errorf("Covering(/d/x) = %+v", got)
	}
	if err := m.Unlock(1, d.Token, "/g"); !errs.Is(err, errs.Conflict) {
		t.Errorf("Unlock with a URI outside the lock: %v, want Conflict", err)
	}
	if err := m.Unlock(2, d.Token, "/d"); !errs.Is(err, errs.Conflict) {
		t.Errorf("Unlock by another user: %v, want Conflict", err)
	}
	if err := m.Unlock(1, d.Token, "/d/x"); err != nil {
		t.Errorf("Unlock via a member of a depth-infinity lock: %v", err)
	}
	if m.Holds(1, d.Token, "/d") || m.Count(1) != 1 {
		t.Error("unlocked lock still there")
	}
}

func TestLockExpiryAndRefresh(t *testing.T) { eachTable(t, testLockExpiryAndRefresh) }

func testLockExpiryAndRefresh(t *testing.T, newTable func() testTable, clock *testutil.Clock) {
	m := newTable()
	l := mustLock(t, m, 1, Lock{Root: "/f", Timeout: 2 * time.Minute})
	if l.Timeout != 2*time.Minute || !l.Expires.Equal(clock.Now().Add(2*time.Minute)) {
		t.Fatalf("granted %v until %v", l.Timeout, l.Expires)
	}
	clock.Advance(90 * time.Second)
	r, err := m.Refresh(1, l.Token, "/f", 0) // 0: the default
	if err != nil || r.Timeout != DefaultLockTimeout || !r.Expires.Equal(clock.Now().Add(DefaultLockTimeout)) {
		t.Fatalf("Refresh = %+v, %v", r, err)
	}
	if _, err := m.Refresh(1, l.Token, "/other", time.Minute); !errs.Is(err, errs.Precondition) {
		t.Errorf("Refresh via a URI outside the lock: %v", err)
	}
	clock.Advance(DefaultLockTimeout - time.Second)
	if !m.Holds(1, l.Token, "/f") {
		t.Fatal("lock expired early")
	}
	clock.Advance(time.Second)
	if m.Holds(1, l.Token, "/f") || m.Count(1) != 0 {
		t.Fatal("lock outlived its timeout")
	}
	// An expired lock conflicts with nothing and cannot be refreshed.
	mustLock(t, m, 1, Lock{Root: "/f"})
	if _, err := m.Refresh(1, l.Token, "/f", time.Minute); err == nil {
		t.Error("refreshed an expired lock")
	}
	// Requested timeouts are clamped.
	long := mustLock(t, m, 1, Lock{Root: "/long", Timeout: 100 * time.Hour})
	if long.Timeout != MaxLockTimeout {
		t.Errorf("100 h lock granted %v, want %v", long.Timeout, MaxLockTimeout)
	}
}

func TestParseTimeout(t *testing.T) {
	cases := map[string]time.Duration{
		"":                            DefaultLockTimeout,
		"Second-60":                   time.Minute,
		"second-60":                   time.Minute,
		"Infinite":                    MaxLockTimeout,
		"Infinite, Second-4100000000": MaxLockTimeout,
		"Second-99999999999999999999": MaxLockTimeout,
		"Second-0":                    DefaultLockTimeout,
		"Second-x, Second-30":         30 * time.Second,
		"Second-7200":                 MaxLockTimeout,
		"garbage":                     DefaultLockTimeout,
		"Second--5":                   DefaultLockTimeout,
	}
	for in, want := range cases {
		if got := ParseTimeout(in); got != want {
			t.Errorf("ParseTimeout(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestLockBoundPerUser(t *testing.T) { eachTable(t, testLockBoundPerUser) }

func testLockBoundPerUser(t *testing.T, newTable func() testTable, clock *testutil.Clock) {
	m := newTable()
	m.setMax(5)
	for i := range 5 {
		mustLock(t, m, 1, Lock{Root: "/f" + string(rune('a'+i)), Timeout: time.Minute})
	}
	if _, err := m.Create(1, Lock{Root: "/over"}); !errs.Is(err, errs.Unavailable) {
		t.Fatalf("lock past the bound: %v, want Unavailable", err)
	}
	mustLock(t, m, 2, Lock{Root: "/over"}) // per user
	clock.Advance(time.Minute)
	mustLock(t, m, 1, Lock{Root: "/over"}) // expired ones free room
}

func TestLockRelease(t *testing.T) { eachTable(t, testLockRelease) }

func testLockRelease(t *testing.T, newTable func() testTable, _ *testutil.Clock) {
	m := newTable()
	for _, p := range []string{"/a", "/a/b", "/a/b/c", "/ab", "/x"} {
		mustLock(t, m, 1, Lock{Root: p})
	}
	mustLock(t, m, 2, Lock{Root: "/a"})
	if n := m.ReleaseBelow(1, "/a"); n != 2 {
		t.Errorf("ReleaseBelow(/a) dropped %d, want 2", n)
	}
	if n := m.Release(1, "/a"); n != 1 {
		t.Errorf("Release(/a) dropped %d, want 1", n)
	}
	if m.Count(1) != 2 || m.Count(2) != 1 {
		t.Errorf("left %d and %d locks, want /ab, /x and user 2's", m.Count(1), m.Count(2))
	}
}
