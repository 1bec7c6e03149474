package davlock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"netdisk/errs"
	"netdisk/internal/rediserr"
	"netdisk/internal/redishealth"
)

// RedisTable is the Table shared by every node of a scaled-out deployment:
// a LOCK taken through one node binds a DELETE through another. Each user's
// locks are one Redis hash (token → lock as JSON). Every operation reads the
// user's hash under WATCH, applies exactly the in-process Manager's rules to
// it, and writes back what changed in MULTI/EXEC, retrying if another node
// changed the hash meanwhile: the rules live in one place (manager.go), and
// two nodes cannot both grant conflicting locks.
//
// When Redis does not answer, the table fails closed: a write is refused
// with Unavailable (Covering reports a stand-in lock, UnavailableToken, that
// Check turns into 503) rather than let through unchecked; Holds is false
// and LOCK fails with Unavailable.
type RedisTable struct {
	rdb    *redis.Client
	prefix string
	now    func() time.Time
	max    int
	log    *slog.Logger
}

var _ Table = (*RedisTable)(nil)

// NewRedis returns the table in rdb under keys prefix+"davlock:{uid}"
// (prefix "" means "netdisk:"); now is its clock (nil: time.Now).
func NewRedis(rdb *redis.Client, prefix string, now func() time.Time, log *slog.Logger) *RedisTable {
	if prefix == "" {
		prefix = "netdisk:"
	}
	if now == nil {
		now = time.Now
	}
	if log == nil {
		log = slog.Default()
	}
	return &RedisTable{rdb: rdb, prefix: prefix, now: now, max: MaxLocksPerUser, log: log}
}

// Now is the table's clock.
func (r *RedisTable) Now() time.Time { return r.now() }

func (r *RedisTable) key(uid int64) string { return r.prefix + "davlock:" + strconv.FormatInt(uid, 10) }

// opTimeout bounds one operation: a lock check sits on every write.
const opTimeout = 2 * time.Second

// with runs fn on a Manager holding uid's locks as Redis has them, then
// stores what fn changed; it retries when another node wrote in between.
func (r *RedisTable) with(uid int64, fn func(m *Manager)) error {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	key := r.key(uid)
	for attempt := 0; attempt < 50; attempt++ {
		err := r.rdb.Watch(ctx, func(tx *redis.Tx) error {
			raw, err := tx.HGetAll(ctx, key).Result()
			if err != nil {
				return err
			}
			before := make(map[string]Lock, len(raw))
			locks := make(map[string]*Lock, len(raw))
			for tok, v := range raw {
				var l Lock
				if err := json.Unmarshal([]byte(v), &l); err != nil {
					continue // unreadable: dropped below, as an expired lock would be
				}
				before[tok] = l
				nl := l
				locks[tok] = &nl
			}
			m := NewManager(r.now)
			m.max = r.max
			m.byUser[uid] = locks
			fn(m)
			after := m.byUser[uid]
			var del []string
			set := map[string]any{}
			for tok := range raw {
				if _, ok := after[tok]; !ok {
					del = append(del, tok)
				}
			}
			var longest time.Time
			for tok, l := range after {
				if l.Expires.After(longest) {
					longest = l.Expires
				}
				if old, ok := before[tok]; ok && old == *l {
					continue
				}
				b, err := json.Marshal(l)
				if err != nil {
					return err
				}
				set[tok] = b
			}
			if len(del) == 0 && len(set) == 0 {
				return nil
			}
			cmds, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
				if len(del) > 0 {
					p.HDel(ctx, key, del...)
				}
				if len(set) > 0 {
					p.HSet(ctx, key, set)
				}
				if len(after) > 0 {
					// The hash outlives its last lock briefly, never forever
					// (relative to the table's clock, which need not be Redis's).
					p.PExpire(ctx, key, longest.Sub(r.now())+time.Minute)
				}
				return nil
			})
			return rediserr.Exec(cmds, err)
		}, key)
		if errors.Is(err, redis.TxFailedErr) {
			continue
		}
		return err
	}
	return fmt.Errorf("davlock: user %d's locks kept changing under 50 attempts", uid)
}

// failed logs a Redis failure and gives it its kind (rediserr: 503 while
// Redis is down or failing over, 500 for a reply that says we asked wrong);
// the table fails closed on either.
func (r *RedisTable) failed(op, name string, err error) error {
	k := rediserr.Kind(err)
	r.log.Log(context.Background(), redishealth.Level(err, slog.LevelWarn), "davlock: Redis failed; refusing lock operations and writes", "op", op, "kind", k, "err", err)
	return errs.E(op, k, name, fmt.Errorf("lock table unavailable: %w", err))
}

// Create takes a new lock (Manager.Create's rules).
func (r *RedisTable) Create(uid int64, l Lock) (Lock, error) {
	var out Lock
	var ferr error
	if err := r.with(uid, func(m *Manager) { out, ferr = m.Create(uid, l) }); err != nil {
		return Lock{}, r.failed("davlock.Lock", l.Root, err)
	}
	return out, ferr
}

// Refresh restarts a lock's timeout (Manager.Refresh's rules).
func (r *RedisTable) Refresh(uid int64, token, name string, timeout time.Duration) (Lock, error) {
	var out Lock
	var ferr error
	if err := r.with(uid, func(m *Manager) { out, ferr = m.Refresh(uid, token, name, timeout) }); err != nil {
		return Lock{}, r.failed("davlock.Refresh", name, err)
	}
	return out, ferr
}

// Unlock removes a lock (Manager.Unlock's rules).
func (r *RedisTable) Unlock(uid int64, token, name string) error {
	var ferr error
	if err := r.with(uid, func(m *Manager) { ferr = m.Unlock(uid, token, name) }); err != nil {
		return r.failed("davlock.Unlock", name, err)
	}
	return ferr
}

// Holds reports whether token is a live lock covering name; false when
// Redis does not answer.
func (r *RedisTable) Holds(uid int64, token, name string) bool {
	var ok bool
	if err := r.with(uid, func(m *Manager) { ok = m.Holds(uid, token, name) }); err != nil {
		r.failed("davlock.Holds", name, err)
		return false
	}
	return ok
}

// unknownLock stands for the locks a Redis that does not answer may hold: a
// write checked against it is refused (503) instead of let through.
func unknownLock(name string) Lock {
	return Lock{Token: UnavailableToken, Root: name, Infinite: true, Timeout: time.Second, Expires: time.Now().Add(time.Second)}
}

// Covering returns the live locks covering name.
func (r *RedisTable) Covering(uid int64, name string) []Lock {
	var out []Lock
	if err := r.with(uid, func(m *Manager) { out = m.Covering(uid, name) }); err != nil {
		r.failed("davlock.Covering", name, err)
		return []Lock{unknownLock(name)}
	}
	return out
}

// Below returns the live locks rooted strictly below name.
func (r *RedisTable) Below(uid int64, name string) []Lock {
	var out []Lock
	if err := r.with(uid, func(m *Manager) { out = m.Below(uid, name) }); err != nil {
		r.failed("davlock.Below", name, err)
		return []Lock{unknownLock(name + "/?")}
	}
	return out
}

// Release destroys the locks rooted at name or below.
func (r *RedisTable) Release(uid int64, name string) int {
	var n int
	if err := r.with(uid, func(m *Manager) { n = m.Release(uid, name) }); err != nil {
		r.failed("davlock.Release", name, err)
	}
	return n
}

// ReleaseBelow destroys the locks rooted strictly below name.
func (r *RedisTable) ReleaseBelow(uid int64, name string) int {
	var n int
	if err := r.with(uid, func(m *Manager) { n = m.ReleaseBelow(uid, name) }); err != nil {
		r.failed("davlock.ReleaseBelow", name, err)
	}
	return n
}

// Count returns uid's number of live locks.
func (r *RedisTable) Count(uid int64) int {
	var n int
	if err := r.with(uid, func(m *Manager) { n = m.Count(uid) }); err != nil {
		r.failed("davlock.Count", "", err)
	}
	return n
}
