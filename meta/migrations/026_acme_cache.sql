-- The ACME certificates of nodes sharing this store (daemon/acme.go): what
-- autocert caches (certificates with their keys, the account key, the
-- answers to challenges in progress) by its own names, so every node serves
-- the certificate one node obtained and answers a challenge another node's
-- order set. A single node keeps them in files under its data directory
-- instead; the table exists in SQLite only so the schemas stay one.
CREATE TABLE acme_cache (
    name TEXT PRIMARY KEY,
    data BLOB NOT NULL
);
