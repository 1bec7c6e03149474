package lock

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"netdisk/errs"
	"netdisk/internal/rediserr"
)

// Redis is the State on a Redis server shared by any number of daemons:
// every change is one Lua script (atomic), and wake-ups are published on one
// channel every daemon subscribes to, so a node waiting on daemon B is woken
// by an unlock on daemon A.
//
// Keys (P is the prefix): P h:<key> hash {node deadline claimed}; P q:<key>
// list of waiting nodes, head first; P users hash user → queue slots held;
// P due ZSET of keys scored by lease end (ms), for Expire; channel P events.
type Redis struct {
	rdb    redis.UniversalClient
	prefix string
}

var _ State = (*Redis)(nil)

// DefaultRedisPrefix prefixes every key and channel of the lock state.
const DefaultRedisPrefix = "netdisk:lock:"

// NewRedis returns the state on rdb (give it short timeouts: an unreachable
// Redis fails calls with errs.Unavailable after them).
func NewRedis(rdb redis.UniversalClient, prefix string) *Redis {
	if prefix == "" {
		prefix = DefaultRedisPrefix
	}
	return &Redis{rdb: rdb, prefix: prefix}
}

func (r *Redis) keys(key string) []string {
	return []string{r.prefix + "h:" + key, r.prefix + "q:" + key, r.prefix + "users", r.prefix + "due"}
}

func (r *Redis) channel() string { return r.prefix + "events" }

func (r *Redis) args(key string, n Node, lim Limits, now time.Time, extra ...any) []any {
	return append([]any{key, n.String(), now.UnixMilli(), lim.Lease.Milliseconds(), r.channel()}, extra...)
}

// luaCommon is the prelude of every script. KEYS h, q, users, due; ARGV key,
// node, now (ms), lease (ms), channel.
const luaCommon = `
local H, Q, U, DUE = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local key, node, now, lease, ch = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5]
local function publish(typ, who) redis.call('PUBLISH', ch, typ .. '\n' .. key .. '\n' .. who) end
local function userOf(n) return string.match(n, '^([^/]*)/') end
local function unslot(n)
  local u = userOf(n)
  if redis.call('HINCRBY', U, u, -1) <= 0 then redis.call('HDEL', U, u) end
end
-- the seed's processQueue: the head gets the lock, to claim within a lease
local function handover()
  local nxt = redis.call('LPOP', Q)
  if not nxt then
    redis.call('DEL', H, Q)
    redis.call('ZREM', DUE, key)
    return
  end
  unslot(nxt)
  redis.call('HSET', H, 'node', nxt, 'deadline', now + lease, 'claimed', '0')
  redis.call('ZADD', DUE, now + lease, key)
  publish('granted', nxt)
end
-- a lease that ended counts as a failure of its holder
local function expire()
  local h = redis.call('HMGET', H, 'node', 'deadline')
  if h[1] and tonumber(h[2]) <= now then
    publish('lost', h[1])
    handover()
  end
end
local function standing()
  local h = redis.call('HMGET', H, 'node', 'deadline', 'claimed')
  if h[1] == node then
    if h[3] == '1' then return {'acquired', 0, h[2]} end
    return {'granted', 0, h[2]}
  end
  local p = redis.call('LPOS', Q, node)
  if p then return {'queued', p + 1, 0} end
  return {'none', 0, 0}
end
local function hold(reentered)
  redis.call('HSET', H, 'node', node, 'deadline', now + lease, 'claimed', '1')
  redis.call('ZADD', DUE, now + lease, key)
  return {'acquired', reentered, now + lease}
end
expire()
`

// ARGV + multi (0/1), maxQueue, maxUserWait.
var tryLockScript = redis.NewScript(luaCommon + `
local h = redis.call('HMGET', H, 'node', 'claimed')
if not h[1] then return hold(0) end
if h[1] == node then
  if h[2] == '1' then return hold(1) end
  return hold(0)
end
if ARGV[6] ~= '1' then return {'refused', 0, 0} end
local p = redis.call('LPOS', Q, node)
if p then return {'queued', p + 1, 0} end
if redis.call('LLEN', Q) >= tonumber(ARGV[7]) then return {'full_key', 0, 0} end
if tonumber(redis.call('HGET', U, userOf(node)) or '0') >= tonumber(ARGV[8]) then return {'full_user', 0, 0} end
redis.call('HINCRBY', U, userOf(node), 1)
return {'queued', redis.call('RPUSH', Q, node), 0}
`)

var heartbeatScript = redis.NewScript(luaCommon + `
if redis.call('HGET', H, 'node') ~= node then return {'none', 0, 0} end
return hold(0)
`)

// ARGV + failed (0/1).
var unlockScript = redis.NewScript(luaCommon + `
if redis.call('HGET', H, 'node') == node then
  if ARGV[6] == '1' then
    handover()
  else
    for _, w in ipairs(redis.call('LRANGE', Q, 0, -1)) do
      unslot(w)
      publish('released', w)
    end
    redis.call('DEL', H, Q)
    redis.call('ZREM', DUE, key)
  end
  return 1
end
if redis.call('LREM', Q, 0, node) > 0 then
  unslot(node)
  return 1
end
return 0
`)

var inspectScript = redis.NewScript(luaCommon + `
return standing()
`)

// KEYS due; ARGV now, limit: the keys whose lease ended.
var dueScript = redis.NewScript(`
return redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
`)

// redisErr gives a Redis failure its kind: unreachable is Unavailable, a
// script error is a bug.
func redisErr(op string, err error) error {
	k := rediserr.Kind(err)
	if k == errs.Unavailable {
		return errs.E(op, k, "", fmt.Errorf("lock state unreachable: %w", err))
	}
	return errs.E(op, k, "", fmt.Errorf("redis: %w", err))
}

func parseResult(op string, v any) (Result, error) {
	xs, ok := v.([]any)
	if !ok || len(xs) != 3 {
		return Result{}, errs.Errorf(op, errs.Other, "unexpected script reply %v", v)
	}
	st, _ := xs[0].(string)
	num := func(x any) int64 {
		switch x := x.(type) {
		case int64:
			return x
		case string:
			n, _ := strconv.ParseInt(x, 10, 64)
			return n
		}
		return 0
	}
	switch st {
	case "full_key":
		return Result{}, errs.Errorf(op, errs.TooMany, "too many waiters for this lock")
	case "full_user":
		return Result{}, errs.Errorf(op, errs.TooMany, "too many locks waited for by this user")
	}
	res := Result{Status: Status(st)}
	switch res.Status {
	case Acquired, Granted:
		res.Reentered = num(xs[1]) == 1
		res.Deadline = time.UnixMilli(num(xs[2]))
	case Queued:
		res.Position = int(num(xs[1]))
	}
	return res, nil
}

func b01(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// TryLock implements State.
func (r *Redis) TryLock(ctx context.Context, key string, n Node, lim Limits, now time.Time) (Result, error) {
	v, err := tryLockScript.Run(ctx, r.rdb, r.keys(key), r.args(key, n, lim, now, b01(lim.MultiNode), lim.MaxQueue, lim.MaxUserWait)...).Result()
	if err != nil {
		return Result{}, redisErr("lock.TryLock", err)
	}
	return parseResult("lock.TryLock", v)
}

// Heartbeat implements State.
func (r *Redis) Heartbeat(ctx context.Context, key string, n Node, lim Limits, now time.Time) (Result, error) {
	v, err := heartbeatScript.Run(ctx, r.rdb, r.keys(key), r.args(key, n, lim, now)...).Result()
	if err != nil {
		return Result{}, redisErr("lock.Heartbeat", err)
	}
	res, err := parseResult("lock.Heartbeat", v)
	if err == nil && res.Status != Acquired {
		return Result{}, errs.Errorf("lock.Heartbeat", errs.Conflict, "lock not held by this node")
	}
	return res, err
}

// Unlock implements State.
func (r *Redis) Unlock(ctx context.Context, key string, n Node, failed bool, lim Limits, now time.Time) error {
	ok, err := unlockScript.Run(ctx, r.rdb, r.keys(key), r.args(key, n, lim, now, b01(failed))...).Int64()
	if err != nil {
		return redisErr("lock.Unlock", err)
	}
	if ok == 0 {
		return errs.Errorf("lock.Unlock", errs.Conflict, "lock not held by this node")
	}
	return nil
}

// Inspect implements State.
func (r *Redis) Inspect(ctx context.Context, key string, n Node, lim Limits, now time.Time) (Result, error) {
	v, err := inspectScript.Run(ctx, r.rdb, r.keys(key), r.args(key, n, lim, now)...).Result()
	if err != nil {
		return Result{}, redisErr("lock.Inspect", err)
	}
	return parseResult("lock.Inspect", v)
}

// Expire implements State: the due keys in batches, each passed on by the
// same script every call starts with (which re-checks the lease, so a
// heartbeat between the listing and the script wins).
func (r *Redis) Expire(ctx context.Context, lim Limits, now time.Time) error {
	for {
		keys, err := dueScript.Run(ctx, r.rdb, []string{r.prefix + "due"}, now.UnixMilli(), 100).StringSlice()
		if err != nil {
			return redisErr("lock.Expire", err)
		}
		for _, k := range keys {
			if _, err := inspectScript.Run(ctx, r.rdb, r.keys(k), r.args(k, Node{}, lim, now)...).Result(); err != nil {
				return redisErr("lock.Expire", err)
			}
		}
		if len(keys) < 100 {
			return nil
		}
	}
}

// Watch implements State: it returns once subscribed, so no event published
// after it returns is missed.
func (r *Redis) Watch(ctx context.Context, deliver func(Event)) (func(), error) {
	ps := r.rdb.Subscribe(ctx, r.channel())
	// Waiting for the confirmation makes "subscribed on return" true. A
	// Redis down now is no reason to refuse to start: the subscription
	// reconnects by itself, and nodes learn what they missed from their
	// standing when their streams reconnect.
	ps.Receive(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for msg := range ps.Channel() {
			typ, rest, _ := strings.Cut(msg.Payload, "\n")
			key, node, _ := strings.Cut(rest, "\n")
			deliver(Event{Type: EventType(typ), Key: key, Node: ParseNode(node)})
		}
	}()
	return func() { ps.Close(); <-done }, nil
}

// Waiting counts the queued nodes: the queue slots the users hold (one
// hash, so one call whatever the number of keys).
func (r *Redis) Waiting(ctx context.Context) (int, error) {
	vs, err := r.rdb.HVals(ctx, r.prefix+"users").Result()
	if err != nil {
		return 0, redisErr("lock.Waiting", err)
	}
	n := 0
	for _, v := range vs {
		c, _ := strconv.Atoi(v)
		n += c
	}
	return n, nil
}
