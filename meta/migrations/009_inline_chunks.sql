-- Small chunks kept inside the database: a file whose whole content is one
-- chunk of at most a few KiB is committed in the same WAL transaction as its
-- tree entry, so a small upload costs one fsync (the WAL commit) instead of
-- the blob file's, its directory's and the commit's. The chunk keeps its
-- record in chunks (identity, dedup, GC, fsck are unchanged); its bytes live
-- here instead of in the blob store, and go with the record.
CREATE TABLE chunk_data (
    chunk_id INTEGER PRIMARY KEY REFERENCES chunks(id) ON DELETE CASCADE,
    data     BLOB    NOT NULL
);
