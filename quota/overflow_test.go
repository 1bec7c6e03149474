package quota_test

import (
	"context"
	"fmt"
	"math"
	"math/big"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"netdisk/errs"
	"netdisk/quota"
)

// extremes are sizes at the edges of int64 and of a double's exact integers
// (the Redis scripts compute in Lua doubles).
var extremes = []int64{0, 1, 2, 100, quota.MaxBytes - 1, quota.MaxBytes, quota.MaxBytes + 1,
	1 << 53, 1<<53 + 1, 1<<53 + 2, 1 << 62, math.MaxInt64 - 1, math.MaxInt64, -1, math.MinInt64}

// TestPropertyExtremeSizes drives reserve/chunk/commit/release/add with
// extreme sizes through both ledgers and checks every answer against a model
// in arbitrary precision: nothing wraps, nothing is admitted past the total
// or past MaxBytes, and the figures read back exactly.
func TestPropertyExtremeSizes(t *testing.T) {
	for _, im := range impls {
		t.Run(im.name, func(t *testing.T) {
			for seed := int64(1); seed <= 4; seed++ {
				t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { runExtreme(t, newEnv(t, im), seed, 300) })
			}
		})
	}
}

func runExtreme(t *testing.T, e *env, seed int64, steps int) {
	rng := rand.New(rand.NewSource(seed))
	type mUser struct {
		id                         int64
		total, finished, uploading int64
	}
	type mSess struct {
		user               *mUser
		declared, received int64
		next               int
	}
	var users []*mUser
	for i, total := range []int64{0, 100, quota.MaxBytes, 1<<53 + 1, 1 << 62, math.MaxInt64} {
		users = append(users, &mUser{id: e.user(fmt.Sprint("x", i), total), total: total})
	}
	sessions := map[string]*mSess{}
	var ids []string
	// openSession picks one of the sessions still open, if any.
	openSession := func() (string, *mSess) {
		if len(ids) == 0 {
			return "", nil
		}
		id := ids[rng.Intn(len(ids))]
		return id, sessions[id]
	}
	pickVal := func() int64 {
		if rng.Intn(4) == 0 {
			return rng.Int63n(1000)
		}
		return extremes[rng.Intn(len(extremes))]
	}
	// fits is the admission rule in arbitrary precision.
	fits := func(u *mUser, n int64) bool {
		sum := new(big.Int).Add(big.NewInt(u.finished), big.NewInt(u.uploading))
		sum.Add(sum, big.NewInt(n))
		if sum.Cmp(big.NewInt(quota.MaxBytes)) > 0 {
			return false
		}
		return u.total <= 0 || sum.Cmp(big.NewInt(u.total)) <= 0
	}
	want := func(step int, what string, err error, ok bool, kind errs.Kind) {
		t.Helper()
		if ok && err != nil || !ok && !errs.Is(err, kind) {
			t.Fatalf("step %d %s: error %v (kind %v), want ok=%v or kind %v", step, what, err, errs.KindOf(err), ok, kind)
		}
	}
	ctx := e.ctx
	for step := 0; step < steps; step++ {
		u := users[rng.Intn(len(users))]
		switch r := rng.Intn(10); {
		case r < 4:
			n := pickVal()
			id := fmt.Sprintf("x%d", step)
			_, err := e.l.Reserve(ctx, u.id, id, n)
			what := fmt.Sprintf("reserve %d (user %+v)", n, *u)
			switch {
			case n < 0:
				want(step, what, err, false, errs.Invalid)
			case n > quota.MaxBytes:
				want(step, what, err, false, errs.TooLarge)
			case fits(u, n):
				want(step, what, err, true, 0)
				u.uploading += n
				sessions[id] = &mSess{user: u, declared: n}
				ids = append(ids, id)
			default:
				want(step, what, err, false, errs.Quota)
			}
		case r < 7:
			id, s := openSession()
			if s == nil {
				continue
			}
			n := pickVal()
			if rng.Intn(2) == 0 {
				n = s.declared - s.received // exactly the rest
			}
			err := e.l.Chunk(ctx, s.user.id, id, s.next, n)
			what := fmt.Sprintf("chunk %d of %+v", n, *s)
			switch {
			case n < 0:
				want(step, what, err, false, errs.Invalid)
			case n > s.declared-s.received:
				want(step, what, err, false, errs.TooLarge)
			default:
				want(step, what, err, true, 0)
				s.received += n
				s.next++
			}
		case r < 8:
			id, s := openSession()
			if s == nil {
				continue
			}
			var err error
			if rng.Intn(2) == 0 {
				_, err = e.l.Commit(ctx, s.user.id, id, s.declared)
				s.user.finished += s.declared
			} else {
				_, err = e.l.Release(ctx, s.user.id, id)
			}
			want(step, "end", err, true, 0)
			s.user.uploading -= s.declared
			delete(sessions, id)
		default:
			d := pickVal()
			if d < 0 && d != math.MinInt64 {
				d = -min(u.finished, -d) // a delete frees at most what exists
			}
			err := e.l.AddFinished(ctx, u.id, d)
			what := fmt.Sprintf("add %d (user %+v)", d, *u)
			switch {
			case d > quota.MaxBytes || d < -quota.MaxBytes:
				want(step, what, err, false, errs.TooLarge)
			case d > 0 && !fits(u, d):
				want(step, what, err, false, errs.Quota)
			default:
				want(step, what, err, true, 0)
				u.finished += d
			}
		}
		for _, m := range users {
			got := e.usage(m.id)
			if got.Total != m.total || got.Finished != m.finished || got.Uploading != m.uploading {
				t.Fatalf("step %d: ledger %+v, model %+v", step, got, *m)
			}
			if m.total > 0 && got.Committed() > m.total || got.Committed() > quota.MaxBytes {
				t.Fatalf("step %d: committed %d past total %d or MaxBytes", step, got.Committed(), m.total)
			}
		}
	}
}

// An unreachable Redis is 503 with a message that does not name its address.
func TestRedisDownHidesAddress(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	defer c.Close()
	l := quota.NewRedis(c, "", quota.Config{Sink: nopSink{}})
	_, err := l.Reserve(context.Background(), 1, "u", 10)
	if !errs.Is(err, errs.Unavailable) {
		t.Fatalf("error %v, want Unavailable", err)
	}
	if m := errs.Message(err); strings.Contains(m, "127.0.0.1") || strings.Contains(m, ":1") {
		t.Fatalf("message names the address: %q", m)
	}
}

type nopSink struct{ quota.Sink }
