-- What the quota ledger's delayed flushes have added to users.use_space_unfinished,
-- per upload session (package quota). seq fences stale or repeated flushes out;
-- settled_ns != 0 once the session ended and its bytes were subtracted again
-- (kept a while as a tombstone so a late flush cannot re-add them).
CREATE TABLE quota_flushes (
    upload     TEXT    PRIMARY KEY,
    user_id    INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    seq        INTEGER NOT NULL,
    flushed    INTEGER NOT NULL,
    settled_ns INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
CREATE INDEX quota_flushes_user ON quota_flushes (user_id, settled_ns);
