package async

import (
	"context"
	"errors"
	"netdisk/internal/zero"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"netdisk/errs"
	"netdisk/internal/rediserr"
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
//	AsyncDownloadJob:Index                               zset job key → expiry (ms), for the scheduler's scan
//
// Every key expires TTL after its last write (PEXPIREAT now+TTL, the
// caller's now). The seed's bizID:appID is the user ID.
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

func notFound(op, what string) error { return errs.Errorf(op, errs.NotFound, "no such %s", what) }

func (r *Redis) CreateJob(ctx context.Context, j Job, now time.Time) (bool, error) {
	const op = "async.CreateJob"
	exp := now.Add(r.ttl)
	// SET NX with an absolute expiry: the seed's SetNX with its TTL.
	res, err := r.rdb.SetArgs(ctx, j.ID, enc(j), redis.SetArgs{Mode: "NX", ExpireAt: exp}).Result()
	if errors.Is(err, redis.Nil) {
		return false, nil
	}
	if err != nil {
		return false, redisErr(op, err)
	}
	if res != "OK" {
		return false, nil
	}
	return true, redisErr(op, r.rdb.ZAdd(ctx, IndexKey, redis.Z{Score: float64(exp.UnixMilli()), Member: j.ID}).Err())
}

func (r *Redis) Job(ctx context.Context, id string, _ time.Time) (Job, error) {
	s, err := r.rdb.Get(ctx, id).Result()
	if errors.Is(err, redis.Nil) {
		return Job{}, notFound("async.Job", "job")
	}
	if err != nil {
		return Job{}, redisErr("async.Job", err)
	}
	return dec[Job](s)
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
	// The list and the outcomes live as long as the job.
	_, err = r.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.PExpireAt(ctx, TargetsKey(j.ID), exp)
		p.PExpireAt(ctx, ResultsKey(j.ID), exp)
		p.ZAdd(ctx, IndexKey, redis.Z{Score: float64(exp.UnixMilli()), Member: j.ID})
		return nil
	})
	return redisErr(op, err)
}

func (r *Redis) DeleteJob(ctx context.Context, id string) error {
	_, err := r.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Del(ctx, id, TargetsKey(id), ResultsKey(id))
		p.ZRem(ctx, IndexKey, id)
		return nil
	})
	return redisErr("async.DeleteJob", err)
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
	_, err := r.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.LPush(ctx, k, enc(t))
		p.PExpireAt(ctx, k, now.Add(r.ttl))
		return nil
	})
	return redisErr("async.PushTarget", err)
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

func (r *Redis) PutTask(ctx context.Context, t Task, now time.Time) error {
	return redisErr("async.PutTask", r.rdb.SetArgs(ctx, t.ID, enc(t), redis.SetArgs{ExpireAt: now.Add(r.ttl)}).Err())
}

func (r *Redis) Task(ctx context.Context, id string, _ time.Time) (Task, error) {
	s, err := r.rdb.Get(ctx, id).Result()
	if errors.Is(err, redis.Nil) {
		return Task{}, notFound("async.Task", "task")
	}
	if err != nil {
		return Task{}, redisErr("async.Task", err)
	}
	return dec[Task](s)
}

func (r *Redis) SetResult(ctx context.Context, jobID string, res Result, now time.Time) (bool, error) {
	k := ResultsKey(jobID)
	var set *redis.BoolCmd
	_, err := r.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		set = p.HSetNX(ctx, k, res.TaskID, enc(res))
		p.PExpireAt(ctx, k, now.Add(r.ttl))
		return nil
	})
	if err != nil {
		return false, redisErr("async.SetResult", err)
	}
	return set.Val(), nil
}

func (r *Redis) Results(ctx context.Context, jobID string, _ time.Time) (map[string]Result, error) {
	rows, err := r.rdb.HGetAll(ctx, ResultsKey(jobID)).Result()
	if err != nil {
		return nil, redisErr("async.Results", err)
	}
	out := make(map[string]Result, len(rows))
	for k, v := range rows {
		res, err := dec[Result](v)
		if err != nil {
			return nil, err
		}
		out[k] = res
	}
	return out, nil
}

func (r *Redis) AddWork(ctx context.Context, user int64, w Work, now time.Time) error {
	k := WorkKey(AgentKey(user, w.Agent, w.Container))
	_, err := r.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, k, w.TaskID, enc(w))
		p.PExpireAt(ctx, k, now.Add(r.ttl))
		return nil
	})
	return redisErr("async.AddWork", err)
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
	for _, pattern := range []string{job + "*", TargetsKey(job) + "*", ResultsKey(job) + "*", task + "*", WorkKey(agent) + "*"} {
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
