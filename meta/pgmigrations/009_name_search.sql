-- Name search (SQLite migration 015, search.go): a trigram index on
-- lower(name), which LIKE uses, and the search's order, newest first.
-- pg_trgm is a trusted extension (PostgreSQL 13 on): the database's owner
-- may create it. lower() of a COLLATE "C" column folds ASCII only, as
-- SQLite's does; search.go leaves other cased letters to its exact
-- comparison. An index on an expression is kept by the database on every
-- insert, rename and delete, whatever statement makes them.
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE INDEX nodes_name_trgm ON nodes USING gin (lower(name) gin_trgm_ops);
CREATE INDEX nodes_mtime ON nodes (user_id, mtime_ns, id);
