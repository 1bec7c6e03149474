package server

import (
	"context"
	"log/slog"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"netdisk/internal/redishealth"
)

// sharedFailures keeps the login throttle's failure counts in Redis for nodes
// sharing a metadata store, so an attacker spreading guesses over the nodes
// meets the same limits as against one. Only the counts and the time of the
// last failure are shared; attempts being evaluated (inflight) stay per node.
// The rules stay in throttle.go: admit loads the shared counts into the
// node's counters before deciding, done records the outcome in Redis too.
// When Redis does not answer, each node throttles on its own counts.
type sharedFailures struct {
	rdb  *redis.Client
	log  *slog.Logger
	edge redishealth.Edge // Redis failures logged by their edges, not per login
}

func (s *sharedFailures) keys(account, addr string) []string {
	return []string{
		"netdisk:login:pair:" + strconv.Quote(account) + ":" + addr,
		"netdisk:login:addr:" + addr,
		"netdisk:login:acct:" + strconv.Quote(account),
	}
}

// load returns the shared counts and last-failure times (ns) of the pair,
// the address and the account.
func (s *sharedFailures) load(account, addr string) (n [3]int, last [3]int64, ok bool) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	cmds, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, k := range s.keys(account, addr) {
			p.HMGet(ctx, k, "n", "last")
		}
		return nil
	})
	if err != nil {
		s.edge.Failed(ctx, s.log, slog.LevelWarn, "login throttle: Redis unavailable; counting failures on this node only", err)
		return n, last, false
	}
	s.edge.OK(ctx, s.log, "login throttle: counting failures in Redis again")
	for i, c := range cmds {
		vals := c.(*redis.SliceCmd).Val()
		if len(vals) == 2 {
			if v, ok := vals[0].(string); ok {
				n[i], _ = strconv.Atoi(v)
			}
			if v, ok := vals[1].(string); ok {
				last[i], _ = strconv.ParseInt(v, 10, 64)
			}
		}
	}
	return n, last, true
}

// recordScript: ARGV[1] = "fail" or "ok", ARGV[2] = now (ns), ARGV[3] = TTL
// (ms). A failure counts on all three; a success clears the pair and takes
// its failures off the address's and account's sums (throttle.done's rule).
var recordScript = redis.NewScript(`
if ARGV[1] == 'fail' then
  for i = 1, 3 do
    redis.call('HINCRBY', KEYS[i], 'n', 1)
    redis.call('HSET', KEYS[i], 'last', ARGV[2])
    redis.call('PEXPIRE', KEYS[i], ARGV[3])
  end
  return 1
end
local pn = tonumber(redis.call('HGET', KEYS[1], 'n') or '0')
if pn > 0 then
  for i = 2, 3 do
    local v = tonumber(redis.call('HGET', KEYS[i], 'n') or '0') - pn
    if v < 0 then v = 0 end
    redis.call('HSET', KEYS[i], 'n', v)
  end
end
redis.call('DEL', KEYS[1])
return 1`)

func (s *sharedFailures) record(account, addr string, success bool, now time.Time) {
	outcome := "fail"
	if success {
		outcome = "ok"
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	ttl := (FailureWindow + LockMax).Milliseconds()
	if err := recordScript.Run(ctx, s.rdb, s.keys(account, addr), outcome, now.UnixNano(), ttl).Err(); err != nil {
		s.log.Log(ctx, redishealth.Level(err, slog.LevelWarn), "login throttle: cannot record the outcome in Redis", "err", err)
	}
}
