-- Async downloads (seed 002, package async): the embedded store mirrors the
-- seed's Redis layout, one table per kind of key. Every row carries the
-- instant its key expires (the seed's 30 min TTLs); reads ignore expired rows
-- and AsyncPurge deletes them. data is the record as package async encodes it.
CREATE TABLE async_jobs (
	id         TEXT PRIMARY KEY,   -- the job key (owner, path, bucket)
	status     TEXT NOT NULL,
	data       TEXT NOT NULL,
	expires_ns INTEGER NOT NULL
);
CREATE INDEX async_jobs_live ON async_jobs (expires_ns);
-- The job's targets list (LPUSH): seq keeps the push order.
CREATE TABLE async_targets (
	seq        INTEGER PRIMARY KEY AUTOINCREMENT,
	job_id     TEXT NOT NULL,
	data       TEXT NOT NULL,
	expires_ns INTEGER NOT NULL
);
CREATE INDEX async_targets_job ON async_targets (job_id, seq);
CREATE TABLE async_tasks (
	id         TEXT PRIMARY KEY,
	data       TEXT NOT NULL,
	expires_ns INTEGER NOT NULL
);
-- Per-target outcomes of a job (a hash keyed by task id).
CREATE TABLE async_results (
	job_id     TEXT NOT NULL,
	task_id    TEXT NOT NULL,
	data       TEXT NOT NULL,
	expires_ns INTEGER NOT NULL,
	PRIMARY KEY (job_id, task_id)
);
-- Work handed to an agent and not yet answered (a set per agent).
CREATE TABLE async_work (
	agent      TEXT NOT NULL,
	item       TEXT NOT NULL,
	data       TEXT NOT NULL,
	expires_ns INTEGER NOT NULL,
	PRIMARY KEY (agent, item)
);
