package meta

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"netdisk/errs"
)

// AsyncJobs keeps the records of async downloads (package async's embedded
// store): jobs, their targets lists, tasks, per-target results and the work
// handed to each agent. Records are opaque strings to the store; keys are
// the caller's. Every record has an expiry instant: a read at now ignores
// records expired at or before now, as a Redis key past its TTL is gone.
//
// It is not part of Store: the async package is its only user, and a store
// without it runs the daemon without async downloads.
type AsyncJobs interface {
	// AsyncCreateJob adds the job (status, data) unless a live job has the
	// id (SetNX); created tells which. An expired job of that id is
	// replaced.
	AsyncCreateJob(ctx context.Context, id, status, data string, expires, now time.Time) (created bool, err error)
	// AsyncJob returns a live job's status and data; errs.NotFound when it
	// is missing or expired.
	AsyncJob(ctx context.Context, id string, now time.Time) (status, data string, err error)
	// AsyncUpdateJob replaces a live job's status, data and expiry;
	// errs.NotFound when it is missing or expired.
	AsyncUpdateJob(ctx context.Context, id, status, data string, expires, now time.Time) error
	// AsyncDeleteJob removes a job (the rollback of a create whose target
	// could not be added); removing a missing job is success.
	AsyncDeleteJob(ctx context.Context, id string) error
	// AsyncJobs lists the ids of live jobs.
	AsyncJobs(ctx context.Context, now time.Time) ([]string, error)
	// AsyncPushTarget appends data to the job's targets list (LPUSH) and
	// sets the list's expiry.
	AsyncPushTarget(ctx context.Context, jobID, data string, expires time.Time) error
	// AsyncTargets returns the job's live targets in push order.
	AsyncTargets(ctx context.Context, jobID string, now time.Time) ([]string, error)
	// AsyncPutTask stores a task.
	AsyncPutTask(ctx context.Context, id, data string, expires time.Time) error
	// AsyncTask returns a live task; errs.NotFound when missing or expired.
	AsyncTask(ctx context.Context, id string, now time.Time) (string, error)
	// AsyncSetResult records a target's outcome unless one is recorded
	// (the first outcome stands); set tells whether this one was.
	AsyncSetResult(ctx context.Context, jobID, taskID, data string, expires, now time.Time) (set bool, err error)
	// AsyncResults returns the job's live outcomes by task id.
	AsyncResults(ctx context.Context, jobID string, now time.Time) (map[string]string, error)
	// AsyncAddWork and AsyncDoneWork add and remove an item of an agent's
	// work set; AsyncWork lists the live items' data.
	AsyncAddWork(ctx context.Context, agent, item, data string, expires time.Time) error
	AsyncDoneWork(ctx context.Context, agent, item string) error
	AsyncWork(ctx context.Context, agent string, now time.Time) ([]string, error)
	// AsyncPurge deletes every record expired at or before now.
	AsyncPurge(ctx context.Context, now time.Time) error
	// AsyncAddTask is AsyncCreateJob, then (when the live job's status is
	// jobStatus) AsyncPushTarget and AsyncPutTask, in one transaction. It
	// returns whether the job was created and the live job's status; when
	// that is not jobStatus nothing is pushed or stored.
	AsyncAddTask(ctx context.Context, jobID, jobStatus, jobData, targetData, taskID, taskData string, expires, now time.Time) (created bool, status string, err error)
	// AsyncTouch sets the expiry of a live job, its targets and results,
	// and of the given live tasks and work items (agent, item), to
	// expires, in one transaction; records expired at now stay expired.
	// errs.NotFound when the job is missing or expired.
	AsyncTouch(ctx context.Context, jobID string, tasks []string, work [][2]string, expires, now time.Time) error
	// AsyncPurgeOwner deletes, in one transaction, the jobs (with their
	// targets and outcomes) whose id starts with jobPrefix, the tasks whose
	// id starts with taskPrefix and the work rows whose agent key starts
	// with one of workPrefixes: the records of a user being deleted.
	AsyncPurgeOwner(ctx context.Context, jobPrefix, taskPrefix string, workPrefixes ...string) error
}

var _ AsyncJobs = (*SQLStore)(nil)

func (s *SQLStore) AsyncCreateJob(ctx context.Context, id, status, data string, expires, now time.Time) (bool, error) {
	const op = "meta.AsyncCreateJob"
	var created bool
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var err error
		created, err = asyncCreateJob(ctx, tx, id, status, data, expires, now)
		return err
	})
	return created, wrap(op, "", err)
}

// asyncCreateJob stores job id unless a live one holds the id, and says
// whether it did. A replaced expired job takes its stale list and outcomes
// along.
func asyncCreateJob(ctx context.Context, tx *sql.Tx, id, status, data string, expires, now time.Time) (bool, error) {
	res, err := tx.ExecContext(ctx, `INSERT INTO async_jobs (id, status, data, expires_ns) VALUES (?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET status = excluded.status, data = excluded.data, expires_ns = excluded.expires_ns
		WHERE async_jobs.expires_ns <= ?`, id, status, data, expires.UnixNano(), now.UnixNano())
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	if err != nil || n != 1 {
		return false, err
	}
	for _, q := range []string{`DELETE FROM async_targets WHERE job_id = ? AND expires_ns <= ?`,
		`DELETE FROM async_results WHERE job_id = ? AND expires_ns <= ?`} {
		if _, err := tx.ExecContext(ctx, q, id, now.UnixNano()); err != nil {
			return false, err
		}
	}
	return true, nil
}

func (s *SQLStore) AsyncJob(ctx context.Context, id string, now time.Time) (string, string, error) {
	const op = "meta.AsyncJob"
	var status, data string
	err := s.r.QueryRowContext(ctx, `SELECT status, data FROM async_jobs WHERE id = ? AND expires_ns > ?`, id, now.UnixNano()).Scan(&status, &data)
	if errors.Is(err, sql.ErrNoRows) {
		return "", "", errs.E(op, errs.NotFound, "", errors.New("no such job"))
	}
	return status, data, wrap(op, "", err)
}

func (s *SQLStore) AsyncUpdateJob(ctx context.Context, id, status, data string, expires, now time.Time) error {
	const op = "meta.AsyncUpdateJob"
	err := s.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE async_jobs SET status = ?, data = ?, expires_ns = ? WHERE id = ? AND expires_ns > ?`,
			status, data, expires.UnixNano(), id, now.UnixNano())
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return errs.E(op, errs.NotFound, "", errors.New("no such job"))
		}
		// The job's list and outcomes live as long as the job.
		if _, err := tx.ExecContext(ctx, `UPDATE async_targets SET expires_ns = ? WHERE job_id = ?`, expires.UnixNano(), id); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE async_results SET expires_ns = ? WHERE job_id = ?`, expires.UnixNano(), id)
		return err
	})
	return wrap(op, "", err)
}

func (s *SQLStore) AsyncDeleteJob(ctx context.Context, id string) error {
	_, err := s.w.ExecContext(ctx, `DELETE FROM async_jobs WHERE id = ?`, id)
	return wrap("meta.AsyncDeleteJob", "", err)
}

func (s *SQLStore) AsyncJobs(ctx context.Context, now time.Time) ([]string, error) {
	return s.asyncStrings(ctx, "meta.AsyncJobs", `SELECT id FROM async_jobs WHERE expires_ns > ? ORDER BY id`, now.UnixNano())
}

func (s *SQLStore) AsyncPushTarget(ctx context.Context, jobID, data string, expires time.Time) error {
	const op = "meta.AsyncPushTarget"
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO async_targets (job_id, data, expires_ns) VALUES (?, ?, ?)`, jobID, data, expires.UnixNano()); err != nil {
			return err
		}
		// EXPIRE on the list: every element shares it.
		_, err := tx.ExecContext(ctx, `UPDATE async_targets SET expires_ns = ? WHERE job_id = ?`, expires.UnixNano(), jobID)
		return err
	})
	return wrap(op, "", err)
}

func (s *SQLStore) AsyncTargets(ctx context.Context, jobID string, now time.Time) ([]string, error) {
	return s.asyncStrings(ctx, "meta.AsyncTargets", `SELECT data FROM async_targets WHERE job_id = ? AND expires_ns > ? ORDER BY seq`, jobID, now.UnixNano())
}

func (s *SQLStore) AsyncPutTask(ctx context.Context, id, data string, expires time.Time) error {
	_, err := s.w.ExecContext(ctx, `INSERT INTO async_tasks (id, data, expires_ns) VALUES (?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET data = excluded.data, expires_ns = excluded.expires_ns`, id, data, expires.UnixNano())
	return wrap("meta.AsyncPutTask", "", err)
}

func (s *SQLStore) AsyncTask(ctx context.Context, id string, now time.Time) (string, error) {
	const op = "meta.AsyncTask"
	var data string
	err := s.r.QueryRowContext(ctx, `SELECT data FROM async_tasks WHERE id = ? AND expires_ns > ?`, id, now.UnixNano()).Scan(&data)
	if errors.Is(err, sql.ErrNoRows) {
		return "", errs.E(op, errs.NotFound, "", errors.New("no such task"))
	}
	return data, wrap(op, "", err)
}

func (s *SQLStore) AsyncSetResult(ctx context.Context, jobID, taskID, data string, expires, now time.Time) (bool, error) {
	const op = "meta.AsyncSetResult"
	res, err := s.w.ExecContext(ctx, `INSERT INTO async_results (job_id, task_id, data, expires_ns) VALUES (?, ?, ?, ?)
		ON CONFLICT (job_id, task_id) DO UPDATE SET data = excluded.data, expires_ns = excluded.expires_ns
		WHERE async_results.expires_ns <= ?`, jobID, taskID, data, expires.UnixNano(), now.UnixNano())
	if err != nil {
		return false, wrap(op, "", err)
	}
	n, err := res.RowsAffected()
	return n == 1, wrap(op, "", err)
}

func (s *SQLStore) AsyncResults(ctx context.Context, jobID string, now time.Time) (map[string]string, error) {
	const op = "meta.AsyncResults"
	rows, err := s.r.QueryContext(ctx, `SELECT task_id, data FROM async_results WHERE job_id = ? AND expires_ns > ?`, jobID, now.UnixNano())
	if err != nil {
		return nil, wrap(op, "", err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return nil, wrap(op, "", err)
		}
		out[k] = v
	}
	return out, wrap(op, "", rows.Err())
}

func (s *SQLStore) AsyncAddWork(ctx context.Context, agent, item, data string, expires time.Time) error {
	_, err := s.w.ExecContext(ctx, `INSERT INTO async_work (agent, item, data, expires_ns) VALUES (?, ?, ?, ?)
		ON CONFLICT (agent, item) DO UPDATE SET data = excluded.data, expires_ns = excluded.expires_ns`, agent, item, data, expires.UnixNano())
	return wrap("meta.AsyncAddWork", "", err)
}

func (s *SQLStore) AsyncDoneWork(ctx context.Context, agent, item string) error {
	_, err := s.w.ExecContext(ctx, `DELETE FROM async_work WHERE agent = ? AND item = ?`, agent, item)
	return wrap("meta.AsyncDoneWork", "", err)
}

func (s *SQLStore) AsyncWork(ctx context.Context, agent string, now time.Time) ([]string, error) {
	return s.asyncStrings(ctx, "meta.AsyncWork", `SELECT data FROM async_work WHERE agent = ? AND expires_ns > ? ORDER BY item`, agent, now.UnixNano())
}

// asyncTables are the async store's tables, each with its expires_ns.
var asyncTables = []string{"async_jobs", "async_targets", "async_tasks", "async_results", "async_work"}

func (s *SQLStore) AsyncPurge(ctx context.Context, now time.Time) error {
	// The scheduler purges every tick: ask the read pool first, so an idle
	// daemon runs no write transaction (and no commit) for nothing.
	var expired bool
	q := ""
	for i, t := range asyncTables {
		if i > 0 {
			q += " OR "
		}
		q += `EXISTS (SELECT 1 FROM ` + t + ` WHERE expires_ns <= ?1)`
	}
	if err := s.r.QueryRowContext(ctx, `SELECT `+q, now.UnixNano()).Scan(&expired); err != nil || !expired {
		return wrap("meta.AsyncPurge", "", err)
	}
	err := s.tx(ctx, func(tx *sql.Tx) error {
		for _, t := range asyncTables {
			if _, err := tx.ExecContext(ctx, `DELETE FROM `+t+` WHERE expires_ns <= ?`, now.UnixNano()); err != nil {
				return err
			}
		}
		return nil
	})
	return wrap("meta.AsyncPurge", "", err)
}

func (s *SQLStore) AsyncAddTask(ctx context.Context, jobID, jobStatus, jobData, targetData, taskID, taskData string, expires, now time.Time) (bool, string, error) {
	const op = "meta.AsyncAddTask"
	var (
		created bool
		status  string
	)
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var err error
		created, err = asyncCreateJob(ctx, tx, jobID, jobStatus, jobData, expires, now)
		if err != nil {
			return err
		}
		if created {
			status = jobStatus
		} else if err := tx.QueryRowContext(ctx, `SELECT status FROM async_jobs WHERE id = ?`, jobID).Scan(&status); err != nil {
			return err
		}
		if status != jobStatus {
			return nil
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO async_targets (job_id, data, expires_ns) VALUES (?, ?, ?)`, jobID, targetData, expires.UnixNano()); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE async_targets SET expires_ns = ? WHERE job_id = ?`, expires.UnixNano(), jobID); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO async_tasks (id, data, expires_ns) VALUES (?, ?, ?)
			ON CONFLICT (id) DO UPDATE SET data = excluded.data, expires_ns = excluded.expires_ns`, taskID, taskData, expires.UnixNano())
		return err
	})
	return created, status, wrap(op, "", err)
}

func (s *SQLStore) asyncStrings(ctx context.Context, op, q string, args ...any) ([]string, error) {
	rows, err := s.r.QueryContext(ctx, q, args...)
	out, err := scanAll(rows, err, scanString)
	return out, wrap(op, "", err)
}

func (s *SQLStore) AsyncTouch(ctx context.Context, jobID string, tasks []string, work [][2]string, expires, now time.Time) error {
	const op = "meta.AsyncTouch"
	exp, at := expires.UnixNano(), now.UnixNano()
	err := s.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE async_jobs SET expires_ns = ? WHERE id = ? AND expires_ns > ?`, exp, jobID, at)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return errs.E(op, errs.NotFound, "", errors.New("no such job"))
		}
		for _, q := range []string{`UPDATE async_targets SET expires_ns = ? WHERE job_id = ? AND expires_ns > ?`,
			`UPDATE async_results SET expires_ns = ? WHERE job_id = ? AND expires_ns > ?`} {
			if _, err := tx.ExecContext(ctx, q, exp, jobID, at); err != nil {
				return err
			}
		}
		for _, id := range tasks {
			if _, err := tx.ExecContext(ctx, `UPDATE async_tasks SET expires_ns = ? WHERE id = ? AND expires_ns > ?`, exp, id, at); err != nil {
				return err
			}
		}
		for _, w := range work {
			if _, err := tx.ExecContext(ctx, `UPDATE async_work SET expires_ns = ? WHERE agent = ? AND item = ? AND expires_ns > ?`,
				exp, w[0], w[1], at); err != nil {
				return err
			}
		}
		return nil
	})
	return wrap(op, "", err)
}

func (s *SQLStore) AsyncPurgeOwner(ctx context.Context, jobPrefix, taskPrefix string, workPrefixes ...string) error {
	// substr, not LIKE: the prefixes are compared as they are, with no
	// character taken for a wildcard.
	type del struct {
		sql    string
		prefix string
	}
	dels := []del{
		{`DELETE FROM async_targets WHERE substr(job_id, 1, ?) = ?`, jobPrefix},
		{`DELETE FROM async_results WHERE substr(job_id, 1, ?) = ?`, jobPrefix},
		{`DELETE FROM async_jobs WHERE substr(id, 1, ?) = ?`, jobPrefix},
		{`DELETE FROM async_tasks WHERE substr(id, 1, ?) = ?`, taskPrefix},
	}
	for _, w := range workPrefixes {
		dels = append(dels, del{`DELETE FROM async_work WHERE substr(agent, 1, ?) = ?`, w})
	}
	err := s.tx(ctx, func(tx *sql.Tx) error {
		for _, q := range dels {
			if _, err := tx.ExecContext(ctx, q.sql, len(q.prefix), q.prefix); err != nil {
				return err
			}
		}
		return nil
	})
	return wrap("meta.AsyncPurgeOwner", "", err)
}
