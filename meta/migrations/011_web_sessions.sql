-- The web page's sign-in sessions, in the store so that every node sharing
-- it knows them (a browser signed in through one node is signed in on all)
-- and ending one ends it everywhere. token_hash is the hex SHA-256 of the
-- cookie's token: the table never holds a usable cookie. A user's deletion
-- ends their sessions (ON DELETE CASCADE); a new password ends them too
-- (SetPassword). last_ns is the last use, written at most once a minute per
-- session (web/session.go).
CREATE TABLE web_sessions (
    token_hash TEXT    PRIMARY KEY,
    user_id    INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    csrf       TEXT    NOT NULL,
    created_ns INTEGER NOT NULL,
    last_ns    INTEGER NOT NULL
);
CREATE INDEX web_sessions_user ON web_sessions (user_id, created_ns);
CREATE INDEX web_sessions_last ON web_sessions (last_ns);
CREATE INDEX web_sessions_created ON web_sessions (created_ns);
