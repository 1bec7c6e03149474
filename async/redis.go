package async

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"netdisk/errs"
	"netdisk/internal/rediserr"
	"netdisk/internal/zero"
)

// Redis is the Store of daemons sharing one Redis, in the seed's layout:
//
//	AsyncDownloadTask:{user}:{path}:{uuid}               string, task JSON
//	AsyncDownloadJob:{user}:{path}:{bucket}              string, job JSON (SET NX)
//	AsyncDownloadJob:Targets:{user}:{path}:{bucket}      list of target JSON (LPUSH)
//
// and, beyond the seed:
//
//	AsyncDownloadJob:Results:{user}:{path}:{bucket}      hash task ID → outcome JSON (HSETNX)
//	AsyncDownloadAgent:Work:{user}:{agent}:{container}   hash task ID → work JSON
//	AsyncDownloadJob:Progress:{user}:{path}:{bucket}     hash task ID → progress JSON
//	AsyncDownloadAgent:Work:{user}:{agent}:{container}   hash task ID → work JSON
//	AsyncDownloadAgent:Known:{user}:{agent}:{container}  string, when the agent last opened its stream
//	AsyncDownloadJob:Index                               zset job key → expiry (ms), for the scheduler's scan
//
// Every key expires TTL after its last write (PEXPIREAT now+TTL, the
// caller's now). The seed's bizID:appID is the user ID. Every call goes
// through redisErr (and MULTI/EXEC through rediserr.Exec), so a Redis that
// cannot serve (down, or a replica refusing writes during a failover) is
// errs.Unavailable, 503, which agents and clients retry.
type Redis struct {
	rdb *redis.Client
	ttl time.Duration
}

var _ Store = (*Redis)(nil)

// IndexKey is the set of live job keys.
const IndexKey = "AsyncDownloadJob:Index"

// WorkKey is an agent's work hash.
func WorkKey(agentKey string) string { return "AsyncDownloadAgent:Work:" + agentKey }

// NewRedis returns a store on rdb whose keys live ttl (0 means DefaultTTL).
func NewRedis(rdb *redis.Client, ttl time.Duration) *Redis {
	zero.OrDefault(&ttl, DefaultTTL)
	return &Redis{rdb: rdb, ttl: ttl}
}

func redisErr(op string, err error) error {
	if err == nil {
		return nil
	}
	return errs.E(op, rediserr.Kind(err), "", err)
}

// tx runs fn in MULTI/EXEC: a command refused while queued (READONLY) is
// the transaction's cause, not a bare EXECABORT.
func (r *Redis) tx(ctx context.Context, op string, fn func(redis.Pipeliner) error) ([]redis.Cmder, error) {
	cmds, err := r.rdb.TxPipelined(ctx, fn)
	return cmds, redisErr(op, rediserr.Exec(cmds, err))
}

func notFound(op, what string) error { return errs.Errorf(op, errs.NotFound, "no such %s", what) }

// createJob registers the job in the index before it writes the job, in
// one script: a failed registration writes nothing, so no job exists that
// the scheduler would never see.
var createJob = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('ZADD', KEYS[2], ARGV[2], KEYS[1])
redis.call('SET', KEYS[1], ARGV[1], 'PXAT', ARGV[2])
return 1
`)

func (r *Redis) CreateJob(ctx context.Context, j Job, now time.Time) (bool, error) {
	exp := now.Add(r.ttl).UnixMilli()
	n, err := createJob.Run(ctx, r.rdb, []string{j.ID, IndexKey}, enc(j), exp).Int()
	if err != nil {
		return false, redisErr("async.CreateJob", err)
	}
	return n == 1, nil
}

// addTask is Store.AddTask. Writes that can fail (the index of the wrong
// type, memory) come before the job is written: whatever part fails, no
// job exists without its registration and its first target. Of an
// expired job of the same ID, the leftover list, outcomes and progress are
// dropped.
var addTask = redis.NewScript(`
local created = 0
local cur = redis.call('GET', KEYS[1])
if cur then
	local st = cjson.decode(cur).status
	if st ~= 'Pending' then return {0, st} end
else
	redis.call('ZADD', KEYS[4], ARGV[4], KEYS[1])
	redis.call('DEL', KEYS[2], KEYS[5], KEYS[6])
	created = 1
end
redis.call('LPUSH', KEYS[2], ARGV[2])
redis.call('PEXPIREAT', KEYS[2], ARGV[4])
redis.call('SET', KEYS[3], ARGV[3], 'PXAT', ARGV[4])
if created == 1 then
	redis.call('SET', KEYS[1], ARGV[1], 'PXAT', ARGV[4])
end
return {created, 'Pending'}
`)

func (r *Redis) AddTask(ctx context.Context, j Job, t Target, task Task, now time.Time) (bool, Status, error) {
	exp := now.Add(r.ttl).UnixMilli()
	res, err := addTask.Run(ctx, r.rdb, []string{j.ID, TargetsKey(j.ID), task.ID, IndexKey, ResultsKey(j.ID), ProgressKey(j.ID)},
		enc(j), enc(t), enc(task), exp).Slice()
	if err != nil {
		return false, "", redisErr("async.AddTask", err)
	}
	if len(res) != 2 {
		return false, "", errs.Errorf("async.AddTask", errs.Other, "unexpected script answer %v", res)
	}
	created, _ := res[0].(int64)
	st, _ := res[1].(string)
	return created == 1, Status(st), nil
}

// touch is Store.Touch: the job's keys, then each target's task, progress
// and its agent's work hash (the agent of the target's requester, the
// job's owner unless the target names another).
var touch = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local exp = ARGV[1]
for i = 1, 4 do redis.call('PEXPIREAT', KEYS[i], exp) end
redis.call('ZADD', KEYS[5], exp, KEYS[1])
for _, raw in ipairs(redis.call('LRANGE', KEYS[2], 0, -1)) do
	local t = cjson.decode(raw)
	redis.call('PEXPIREAT', t.taskId, exp)
	local c = t.containerId
	if type(c) ~= 'string' then c = '' end
	local u = ARGV[3]
	if type(t.user) == 'number' then u = string.format('%d', t.user) end
	redis.call('PEXPIREAT', ARGV[2] .. u .. ':' .. t.agentId .. ':' .. c, exp)
end
return 1
`)

func (r *Redis) Touch(ctx context.Context, jobID string, now time.Time) error {
	const op = "async.Touch"
	j, err := r.Job(ctx, jobID, now)
	if err != nil {
		return err
	}
	n, err := touch.Run(ctx, r.rdb, []string{jobID, TargetsKey(jobID), ResultsKey(jobID), ProgressKey(jobID), IndexKey},
		now.Add(r.ttl).UnixMilli(), WorkKey(""), strconv.FormatInt(j.User, 10)).Int()
	if err != nil {
		return redisErr(op, err)
	}
	if n == 0 {
		return notFound(op, "job")
	}
	return nil
}

func (r *Redis) SetProgress(ctx context.Context, jobID string, p Progress, now time.Time) error {
	k := ProgressKey(jobID)
	_, err := r.tx(ctx, "async.SetProgress", func(tx redis.Pipeliner) error {
		tx.HSet(ctx, k, p.TaskID, enc(p))
		tx.PExpireAt(ctx, k, now.Add(r.ttl))
		return nil
	})
	return err
}

func (r *Redis) Progress(ctx context.Context, jobID string, _ time.Time) (map[string]Progress, error) {
	rows, err := r.rdb.HGetAll(ctx, ProgressKey(jobID)).Result()
	if err != nil {
		return nil, redisErr("async.Progress", err)
	}
	return decMap[Progress](rows, nil)
}

func (r *Redis) SeenAgent(ctx context.Context, agentKey string, now time.Time) error {
	err := r.rdb.SetArgs(ctx, KnownAgentKey(agentKey), now.UnixMilli(), redis.SetArgs{ExpireAt: now.Add(KnownAgentTTL)}).Err()
	return redisErr("async.SeenAgent", err)
}

func (r *Redis) KnownAgent(ctx context.Context, agentKey string, _ time.Time) (bool, error) {
	n, err := r.rdb.Exists(ctx, KnownAgentKey(agentKey)).Result()
	return n == 1, redisErr("async.KnownAgent", err)
}

func (r *Redis) Job(ctx context.Context, id string, _ time.Time) (Job, error) {
	return getRecord[Job](ctx, r.rdb, "async.Job", "job", id)
}

func (r *Redis) UpdateJob(ctx context.Context, j Job, now time.Time) error {
	const op = "async.UpdateJob"
	exp := now.Add(r.ttl)
	_, err := r.rdb.SetArgs(ctx, j.ID, enc(j), redis.SetArgs{Mode: "XX", ExpireAt: exp}).Result()
	if errors.Is(err, redis.Nil) {
		return notFound(op, "job")
	}
	if err != nil {
		return redisErr(op, err)
	}
	// The list, the outcomes and the progress live as long as the job.
	_, err = r.tx(ctx, op, func(p redis.Pipeliner) error {
		p.PExpireAt(ctx, TargetsKey(j.ID), exp)
		p.PExpireAt(ctx, ResultsKey(j.ID), exp)
		p.PExpireAt(ctx, ProgressKey(j.ID), exp)
		p.ZAdd(ctx, IndexKey, redis.Z{Score: float64(exp.UnixMilli()), Member: j.ID})
		return nil
	})
	return err
}

func (r *Redis) DeleteJob(ctx context.Context, id string) error {
	_, err := r.tx(ctx, "async.DeleteJob", func(p redis.Pipeliner) error {
		p.Del(ctx, id, TargetsKey(id), ResultsKey(id), ProgressKey(id))
		p.ZRem(ctx, IndexKey, id)
		return nil
	})
	return err
}

func (r *Redis) Jobs(ctx context.Context, now time.Time) ([]string, error) {
	const op = "async.Jobs"
	// Index entries outlive nothing: drop the expired ones, then list.
	ms := now.UnixMilli()
	if err := r.rdb.ZRemRangeByScore(ctx, IndexKey, "-inf", "("+itoa(ms)).Err(); err != nil {
		return nil, redisErr(op, err)
	}
	ids, err := r.rdb.ZRangeByScore(ctx, IndexKey, &redis.ZRangeBy{Min: "(" + itoa(ms), Max: "+inf"}).Result()
	if err != nil {
		return nil, redisErr(op, err)
	}
	// A key may have expired on Redis's own clock before the index says.
	cmds, err := r.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, id := range ids {
			p.Exists(ctx, id)
		}
		return nil
	})
	err = rediserr.Exec(cmds, err)
	if err != nil {
		return nil, redisErr(op, err)
	}
	live := ids[:0]
	for i, id := range ids {
		if cmds[i].(*redis.IntCmd).Val() == 1 {
			live = append(live, id)
		}
	}
	return live, nil
}

func (r *Redis) PushTarget(ctx context.Context, jobID string, t Target, now time.Time) error {
	k := TargetsKey(jobID)
	_, err := r.tx(ctx, "async.PushTarget", func(p redis.Pipeliner) error {
		p.LPush(ctx, k, enc(t))
		p.PExpireAt(ctx, k, now.Add(r.ttl))
		return nil
	})
	return err
}

func (r *Redis) Targets(ctx context.Context, jobID string, _ time.Time) ([]Target, error) {
	rows, err := r.rdb.LRange(ctx, TargetsKey(jobID), 0, -1).Result()
	if err != nil {
		return nil, redisErr("async.Targets", err)
	}
	// LPUSH puts the newest first: oldest first is the reverse.
	for i, j := 0, len(rows)-1; i < j; i, j = i+1, j-1 {
		rows[i], rows[j] = rows[j], rows[i]
	}
	return decAll[Target](rows, nil)
}

// getRecord reads the record kept under key; what names it when it is
// missing or expired (NotFound).
func getRecord[T any](ctx context.Context, rdb redis.UniversalClient, op, what, key string) (T, error) {
	s, err := rdb.Get(ctx, key).Result()
	if errors.Is(err, redis.Nil) {
		var zero T
		return zero, notFound(op, what)
	}
	if err != nil {
		var zero T
		return zero, redisErr(op, err)
	}
	return dec[T](s)
}

func (r *Redis) PutTask(ctx context.Context, t Task, now time.Time) error {
	return redisErr("async.PutTask", r.rdb.SetArgs(ctx, t.ID, enc(t), redis.SetArgs{ExpireAt: now.Add(r.ttl)}).Err())
}

func (r *Redis) Task(ctx context.Context, id string, _ time.Time) (Task, error) {
	return getRecord[Task](ctx, r.rdb, "async.Task", "task", id)
}

func (r *Redis) SetResult(ctx context.Context, jobID string, res Result, now time.Time) (bool, error) {
	k := ResultsKey(jobID)
	var set *redis.BoolCmd
	_, err := r.tx(ctx, "async.SetResult", func(p redis.Pipeliner) error {
		set = p.HSetNX(ctx, k, res.TaskID, enc(res))
		p.PExpireAt(ctx, k, now.Add(r.ttl))
		return nil
	})
	if err != nil {
		return false, err
	}
	return set.Val(), nil
}

func (r *Redis) Results(ctx context.Context, jobID string, _ time.Time) (map[string]Result, error) {
	rows, err := r.rdb.HGetAll(ctx, ResultsKey(jobID)).Result()
	if err != nil {
		return nil, redisErr("async.Results", err)
	}
	return decMap[Result](rows, nil)
}

func (r *Redis) AddWork(ctx context.Context, user int64, w Work, now time.Time) error {
	k := WorkKey(AgentKey(user, w.Agent, w.Container))
	_, err := r.tx(ctx, "async.AddWork", func(p redis.Pipeliner) error {
		p.HSet(ctx, k, w.TaskID, enc(w))
		p.PExpireAt(ctx, k, now.Add(r.ttl))
		return nil
	})
	return err
}

func (r *Redis) DoneWork(ctx context.Context, agentKey, taskID string) error {
	return redisErr("async.DoneWork", r.rdb.HDel(ctx, WorkKey(agentKey), taskID).Err())
}

func (r *Redis) Work(ctx context.Context, agentKey string, _ time.Time) ([]Work, error) {
	rows, err := r.rdb.HGetAll(ctx, WorkKey(agentKey)).Result()
	if err != nil {
		return nil, redisErr("async.Work", err)
	}
	vals := make([]string, 0, len(rows))
	for _, v := range rows {
		vals = append(vals, v)
	}
	ws, err := decAll[Work](vals, nil)
	sortWork(ws)
	return ws, err
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// PurgeOwner removes a user's records (Store): its keys are found by SCAN
// (deleting a user is rare; the keyspace is walked once per pattern), and
// its jobs leave the index. The patterns hold no glob characters but the
// final *: a user id is digits.
func (r *Redis) PurgeOwner(ctx context.Context, user int64) error {
	const op = "async.PurgeOwner"
	job, task, agent := ownerPrefixes(user)
	for _, pattern := range []string{job + "*", TargetsKey(job) + "*", ResultsKey(job) + "*", ProgressKey(job) + "*",
		task + "*", WorkKey(agent) + "*", KnownAgentKey(agent) + "*"} {
		iter := r.rdb.Scan(ctx, 0, pattern, 500).Iterator()
		var keys []string
		for iter.Next(ctx) {
			keys = append(keys, iter.Val())
		}
		if err := iter.Err(); err != nil {
			return redisErr(op, err)
		}
		for len(keys) > 0 {
			n := min(len(keys), 500)
			if err := r.rdb.Del(ctx, keys[:n]...).Err(); err != nil {
				return redisErr(op, err)
			}
			keys = keys[n:]
		}
	}
	iter := r.rdb.ZScan(ctx, IndexKey, 0, job+"*", 500).Iterator()
	var members []any
	for i := 0; iter.Next(ctx); i++ {
		if i%2 == 0 { // members and scores alternate
			members = append(members, iter.Val())
		}
	}
	if err := iter.Err(); err != nil {
		return redisErr(op, err)
	}
	if len(members) > 0 {
		if err := r.rdb.ZRem(ctx, IndexKey, members...).Err(); err != nil {
			return redisErr(op, err)
		}
	}
	return nil
}
