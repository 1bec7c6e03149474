-- App passwords (device tokens): a secret per device or program that signs
-- in as its user wherever a password does, so a mount or an agent never
-- holds the account's password, and one device can be cut off alone.
-- token_hash is the hex SHA-256 of the secret (the secret is 32 random
-- bytes, so a fast hash is enough): the table never holds a usable token.
-- A user's deletion ends their tokens (ON DELETE CASCADE); a new password
-- does not (a device keeps working; revoke it by name). last_ns is the last
-- use, written at most once a minute per token (drive/tokens.go).
CREATE TABLE app_tokens (
    user_id    INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    name       TEXT    NOT NULL,
    token_hash TEXT    PRIMARY KEY,
    created_ns INTEGER NOT NULL,
    last_ns    INTEGER NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX app_tokens_user_name ON app_tokens (user_id, name);
