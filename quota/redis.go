package quota

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"netdisk/errs"
	"netdisk/internal/rediserr"
)

// Redis is the ledger on a Redis server shared by any number of daemons. All
// state changes are Lua scripts (scripts.go).
type Redis struct {
	rdb    redis.UniversalClient
	prefix string
	cfg    Config
}

var _ Ledger = (*Redis)(nil)

// DefaultPrefix prefixes every key the ledger writes.
const DefaultPrefix = "netdisk:quota:"

// NewRedis returns a ledger on rdb. Give the client short timeouts (e.g.
// 1–2 s): while Redis is unreachable every call fails with errs.Unavailable
// after them. Call Reconcile before use on a fresh or lost Redis; on a Redis
// already reconciled by another daemon it is not needed.
func NewRedis(rdb redis.UniversalClient, prefix string, cfg Config) *Redis {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	return &Redis{rdb: rdb, prefix: prefix, cfg: cfg.withDefaults()}
}

func (r *Redis) kEpoch() string            { return r.prefix + "epoch" }
func (r *Redis) kLock() string             { return r.prefix + "reconciling" }
func (r *Redis) kDue() string              { return r.prefix + "due" }
func (r *Redis) kHolds() string            { return r.prefix + "holds" }
func (r *Redis) kUser(id int64) string     { return r.prefix + "u:" + strconv.FormatInt(id, 10) }
func (r *Redis) kSession(up string) string { return r.prefix + "s:" + up }
func (r *Redis) kBitmap(up string) string  { return r.prefix + "b:" + up }
func ms(t time.Time) string                { return strconv.FormatInt(t.UnixMilli(), 10) }
func (r *Redis) sessKeys(user int64, up string) []string {
	return []string{r.kEpoch(), r.kUser(user), r.kSession(up), r.kBitmap(up), r.kDue()}
}

// redisErr gives a Redis failure its kind: unreachable or not serving is
// Unavailable (503) marked errs.ErrLedgerUnreachable (users see that text,
// not the cause with Redis's address), a script error is a bug.
func redisErr(op string, err error) error {
	if err == nil {
		return nil
	}
	k := rediserr.Kind(err)
	if k == errs.Unavailable {
		return errs.E(op, k, "", fmt.Errorf("%w: redis: %w", errs.ErrLedgerUnreachable, err))
	}
	return errs.E(op, k, "", fmt.Errorf("redis: %w", err))
}

func ints(v any) ([]int64, error) {
	xs, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("quota: unexpected script reply %T", v)
	}
	out := make([]int64, len(xs))
	for i, x := range xs {
		switch x := x.(type) {
		case int64:
			out[i] = x
		case string:
			n, err := strconv.ParseInt(x, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("quota: script reply: %w", err)
			}
			out[i] = n
		default:
			return nil, fmt.Errorf("quota: unexpected script reply element %T", x)
		}
	}
	return out, nil
}

func usageOf(v []int64) Usage {
	if len(v) < 5 {
		return Usage{}
	}
	return Usage{Total: v[1], Finished: v[2], Uploading: v[3], Unfinished: v[4]}
}

// runUser runs a user script, loading the user from the sink once if Redis
// does not know them yet (a user created after Reconcile).
func (r *Redis) runUser(ctx context.Context, op string, user int64, s *redis.Script, keys []string, args ...any) ([]int64, error) {
	for attempt := 0; ; attempt++ {
		v, err := s.Run(ctx, r.rdb, keys, args...).Result()
		if err != nil {
			return nil, redisErr(op, err)
		}
		res, err := ints(v)
		if err != nil {
			return nil, errs.E(op, errs.Other, "", err)
		}
		switch res[0] {
		case -1:
			return nil, lost(op)
		case -2:
			if attempt > 0 {
				return nil, errs.Errorf(op, errs.Other, "user %d vanished while loading", user)
			}
			if err := r.loadUser(ctx, op, user); err != nil {
				return nil, err
			}
			continue
		}
		return res, nil
	}
}

func (r *Redis) loadUser(ctx context.Context, op string, user int64) error {
	t, err := r.cfg.Sink.User(ctx, user)
	if err != nil {
		return err
	}
	n, err := loadUserScript.Run(ctx, r.rdb, []string{r.kEpoch(), r.kUser(user)}, t.Total, t.Finished).Int64()
	if err != nil {
		return redisErr(op, err)
	}
	if n == -1 {
		return lost(op)
	}
	return nil
}

func (r *Redis) Reserve(ctx context.Context, user int64, upload string, declared int64) (Usage, error) {
	const op = "quota.Reserve"
	if err := checkReservation(op, upload, declared); err != nil {
		return Usage{}, err
	}
	return r.reserve(ctx, op, user, upload, declared, "0")
}

func (r *Redis) Hold(ctx context.Context, user int64, upload string, declared int64, until time.Time) (Usage, error) {
	const op = "quota.Hold"
	if until.IsZero() {
		return Usage{}, errs.Errorf(op, errs.Invalid, "hold %q without a lease", upload)
	}
	if err := checkReservation(op, upload, declared); err != nil {
		return Usage{}, err
	}
	return r.reserve(ctx, op, user, upload, declared, ms(until))
}

func (r *Redis) Renew(ctx context.Context, user int64, upload string, until time.Time) (bool, error) {
	const op = "quota.Renew"
	st, err := renewScript.Run(ctx, r.rdb, []string{r.kEpoch(), r.kSession(upload), r.kHolds()}, user, ms(until), upload).Int64()
	if err != nil {
		return false, redisErr(op, err)
	}
	switch st {
	case 0:
		return true, nil
	case 3:
		return false, nil
	case -1:
		return false, lost(op)
	case -5:
		return false, errs.Errorf(op, errs.Permission, "upload %s belongs to another user", upload)
	}
	return false, errs.Errorf(op, errs.Other, "unexpected status %d", st)
}

func (r *Redis) ExpireHolds(ctx context.Context, now time.Time) (int, error) {
	const op = "quota.ExpireHolds"
	total := 0
	for {
		n, err := expireHoldsScript.Run(ctx, r.rdb, []string{r.kEpoch(), r.kHolds()}, ms(now), r.cfg.Batch, r.prefix).Int()
		if err != nil {
			return total, redisErr(op, err)
		}
		if n == -1 {
			return total, lost(op)
		}
		total += n
		if n < r.cfg.Batch {
			return total, nil
		}
	}
}

func (r *Redis) reserve(ctx context.Context, op string, user int64, upload string, declared int64, holdMs string) (Usage, error) {
	res, err := r.runUser(ctx, op, user, reserveScript, []string{r.kEpoch(), r.kUser(user), r.kSession(upload), r.kHolds()},
		user, declared, holdMs, upload)
	if err != nil {
		return Usage{}, err
	}
	u := usageOf(res)
	switch res[0] {
	case 1:
		return u, overQuota(op, u, declared)
	case -3:
		return u, errs.Errorf(op, errs.Conflict, "upload %s already reserved with another size", upload)
	}
	return u, nil
}

func (r *Redis) Chunk(ctx context.Context, user int64, upload string, index int, n int64) error {
	const op = "quota.Chunk"
	if err := checkChunk(op, index, n); err != nil {
		return err
	}
	due := r.cfg.Clock.Now().Add(r.cfg.Delay)
	st, err := chunkScript.Run(ctx, r.rdb, r.sessKeys(user, upload), user, index, n, ms(due), upload).Int64()
	if err != nil {
		return redisErr(op, err)
	}
	switch st {
	case 0, 2:
		return nil
	case -1:
		return lost(op)
	case 3:
		return errs.Errorf(op, errs.NotFound, "upload %s has no reservation", upload)
	case -5:
		return errs.Errorf(op, errs.Permission, "upload %s belongs to another user", upload)
	case -6:
		return errs.Errorf(op, errs.TooLarge, "chunk exceeds the declared size of upload %s", upload)
	}
	return errs.Errorf(op, errs.Other, "unexpected status %d", st)
}

func (r *Redis) end(ctx context.Context, op string, user int64, upload string, size int64) (Released, error) {
	v, err := endScript.Run(ctx, r.rdb, append(r.sessKeys(user, upload), r.kHolds()), user, upload, size).Result()
	if err != nil {
		return Released{}, redisErr(op, err)
	}
	res, err := ints(v)
	if err != nil {
		return Released{}, errs.E(op, errs.Other, "", err)
	}
	switch res[0] {
	case 0:
	case 3:
		return Released{}, nil
	case -1:
		return Released{}, lost(op)
	case -5:
		return Released{}, errs.Errorf(op, errs.Permission, "upload %s belongs to another user", upload)
	case -6:
		return Released{}, errs.Errorf(op, errs.TooLarge, "merged size %d exceeds the declared size", size)
	default:
		return Released{}, errs.Errorf(op, errs.Other, "unexpected status %d", res[0])
	}
	rel := Released{Found: true, Declared: res[1], Received: res[2], Flushed: res[3]}
	if res[4] == 1 {
		rel.InFlight = res[5] - rel.Flushed
		rel.Pending = rel.Received - res[5]
	} else {
		rel.Pending = rel.Received - rel.Flushed
	}
	return rel, nil
}

func (r *Redis) Commit(ctx context.Context, user int64, upload string, size int64) (Released, error) {
	return commit(ctx, r, user, upload, size)
}

func (r *Redis) Release(ctx context.Context, user int64, upload string) (Released, error) {
	return release(ctx, r, user, upload)
}

func (r *Redis) AddFinished(ctx context.Context, user int64, delta int64) error {
	const op = "quota.AddFinished"
	if err := checkSize(op, "a change", delta); err != nil {
		return err
	}
	res, err := r.runUser(ctx, op, user, addFinishedScript, []string{r.kEpoch(), r.kUser(user)}, delta)
	if err != nil {
		return err
	}
	if res[0] == 1 {
		return overQuota(op, usageOf(res), delta)
	}
	return nil
}

func (r *Redis) SetTotal(ctx context.Context, user int64, total int64) error {
	const op = "quota.SetTotal"
	for attempt := 0; attempt < 2; attempt++ {
		st, err := setTotalScript.Run(ctx, r.rdb, []string{r.kEpoch(), r.kUser(user)}, total).Int64()
		if err != nil {
			return redisErr(op, err)
		}
		switch st {
		case 0:
			return nil
		case -1:
			return lost(op)
		}
		if err := r.loadUser(ctx, op, user); err != nil {
			return err
		}
	}
	return errs.Errorf(op, errs.Other, "user %d vanished while loading", user)
}

// Forget drops the user's figures; their sessions, if any, are released by
// the upload service (or dropped by the next Reconcile).
func (r *Redis) Forget(ctx context.Context, user int64) error {
	return redisErr("quota.Forget", r.rdb.Del(ctx, r.kUser(user)).Err())
}

func (r *Redis) Usage(ctx context.Context, user int64) (Usage, error) {
	res, err := r.runUser(ctx, "quota.Usage", user, usageScript, []string{r.kEpoch(), r.kUser(user)})
	if err != nil {
		return Usage{}, err
	}
	return usageOf(res), nil
}

func (r *Redis) ScanDue(ctx context.Context, now time.Time) (int, error) {
	return scanDue(ctx, r, r.cfg.Sink, now, r.cfg.Batch)
}

func (r *Redis) claim(ctx context.Context, now time.Time, limit int) ([]claimed, error) {
	const op = "quota.ScanDue"
	v, err := claimScript.Run(ctx, r.rdb, []string{r.kEpoch(), r.kDue()}, ms(now), ms(now.Add(r.cfg.Lease)), limit, r.prefix).Result()
	if err != nil {
		return nil, redisErr(op, err)
	}
	xs, ok := v.([]any)
	if !ok || len(xs) == 0 {
		return nil, errs.Errorf(op, errs.Other, "unexpected claim reply %v", v)
	}
	if st, _ := xs[0].(int64); st == -1 {
		return nil, lost(op)
	}
	var out []claimed
	for i := 1; i+4 <= len(xs); i += 4 {
		up, _ := xs[i].(string)
		nums, err := ints(xs[i+1 : i+4])
		if err != nil {
			return nil, errs.E(op, errs.Other, "", err)
		}
		out = append(out, claimed{Flush{Upload: up, User: nums[0], Seq: nums[1], Target: nums[2]}})
	}
	return out, nil
}

func (r *Redis) ack(ctx context.Context, c claimed) error {
	err := ackScript.Run(ctx, r.rdb, []string{r.kSession(c.Upload), r.kDue()}, c.Upload, c.Seq).Err()
	return redisErr("quota.ScanDue", err)
}

// Reconcile rebuilds the ledger in Redis from SQLite. It first deletes the
// epoch key, so every daemon's ledger calls answer ErrStateLost (503) until
// the rebuilt state and a new epoch are written in one MULTI; a short lock
// keeps two daemons from rebuilding at once.
func (r *Redis) Reconcile(ctx context.Context, truth Truth) error {
	const op = "quota.Reconcile"
	token := strconv.FormatInt(time.Now().UnixNano(), 36)
	ok, err := r.rdb.SetNX(ctx, r.kLock(), token, 2*time.Minute).Result()
	if err != nil {
		return redisErr(op, err)
	}
	if !ok {
		return errs.E(op, errs.Unavailable, "", fmt.Errorf("another daemon is reconciling: %w", ErrStateLost))
	}
	defer r.rdb.Del(context.WithoutCancel(ctx), r.kLock())
	if err := r.rdb.Del(ctx, r.kEpoch()).Err(); err != nil {
		return redisErr(op, err)
	}
	// The epoch key is gone, so nobody changes the state now: read the
	// holds whose lease runs (other nodes' PUTs in progress), which no
	// database row lists, then drop the old state.
	now := r.cfg.Clock.Now()
	live, err := r.liveHolds(ctx, now)
	if err != nil {
		return err
	}
	iter := r.rdb.Scan(ctx, 0, r.prefix+"*", 1000).Iterator()
	var batch []string
	for iter.Next(ctx) {
		if k := iter.Val(); k != r.kLock() {
			batch = append(batch, k)
		}
		if len(batch) >= 1000 {
			if err := r.rdb.Unlink(ctx, batch...).Err(); err != nil {
				return redisErr(op, err)
			}
			batch = batch[:0]
		}
	}
	if err := iter.Err(); err != nil {
		return redisErr(op, err)
	}
	if len(batch) > 0 {
		if err := r.rdb.Unlink(ctx, batch...).Err(); err != nil {
			return redisErr(op, err)
		}
	}

	us, sessions, recs, err := readTruth(ctx, r.cfg.Sink, truth, live)
	if err != nil {
		return err
	}
	_, err = r.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		for _, s := range sessions {
			u := us[s.User]
			if u == nil {
				continue
			}
			u.Uploading += s.Declared
			u.Unfinished += s.Received
			rec := recs[s.Upload]
			p.HSet(ctx, r.kSession(s.Upload), "user", s.User, "declared", s.Declared, "received", s.Received,
				"flushed", rec.Flushed, "infl", 0, "target", 0, "seq", reconcileSeq(rec), "lease", 0, "due", ms(now))
			if !s.Lease.IsZero() {
				p.HSet(ctx, r.kSession(s.Upload), "hold", ms(s.Lease))
				p.ZAdd(ctx, r.kHolds(), redis.Z{Score: float64(s.Lease.UnixMilli()), Member: s.Upload})
			}
			if len(s.Have) > 0 {
				p.Set(ctx, r.kBitmap(s.Upload), bitmap(s.Have), 0)
			}
			if s.Received != rec.Flushed {
				p.ZAdd(ctx, r.kDue(), redis.Z{Score: float64(now.UnixMilli()), Member: s.Upload})
			}
		}
		for id, u := range us {
			p.HSet(ctx, r.kUser(id), "total", u.Total, "finished", u.Finished, "uploading", u.Uploading, "unfinished", u.Unfinished)
		}
		p.Set(ctx, r.kEpoch(), token, 0)
		return nil
	})
	return redisErr(op, err)
}

// liveHolds reads the holds whose lease ends after now.
func (r *Redis) liveHolds(ctx context.Context, now time.Time) ([]Session, error) {
	const op = "quota.Reconcile"
	ids, err := r.rdb.ZRangeByScore(ctx, r.kHolds(), &redis.ZRangeBy{Min: "(" + ms(now), Max: "+inf"}).Result()
	if err != nil {
		return nil, redisErr(op, err)
	}
	var out []Session
	for _, id := range ids {
		v, err := r.rdb.HMGet(ctx, r.kSession(id), "user", "declared", "hold").Result()
		if err != nil {
			return nil, redisErr(op, err)
		}
		var f [3]int64
		ok := true
		for i, x := range v {
			str, isStr := x.(string)
			n, perr := strconv.ParseInt(str, 10, 64)
			ok = ok && isStr && perr == nil
			f[i] = n
		}
		if ok {
			out = append(out, Session{User: f[0], Upload: id, Declared: f[1], Lease: time.UnixMilli(f[2])})
		}
	}
	return out, nil
}

// bitmap encodes chunk indexes as a Redis bitmap (bit 0 is the high bit of
// byte 0, as SETBIT numbers them).
func bitmap(have []int) string {
	hi := 0
	for _, i := range have {
		hi = max(hi, i)
	}
	b := make([]byte, hi/8+1)
	for _, i := range have {
		if i >= 0 {
			b[i/8] |= 0x80 >> (i % 8)
		}
	}
	return string(b)
}

func (r *Redis) Ready(ctx context.Context) error {
	n, err := r.rdb.Exists(ctx, r.kEpoch()).Result()
	if err != nil {
		return redisErr("quota.Ready", err)
	}
	if n == 0 {
		return lost("quota.Ready")
	}
	return nil
}
