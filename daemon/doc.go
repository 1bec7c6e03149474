// Package daemon is netdisk's composition root, what `netdisk serve` runs.
// Open opens a data directory (SQLite and the chunk directory in it, or
// PostgreSQL, S3 and Redis for nodes sharing one drive), wires the layers
// (drive, upload sessions, the quota ledger, the lock service, async
// downloads) and puts package server's HTTP surface on top. The Daemon
// serves it, runs the background loops (GC, upload expiry, checksums, the
// ledger, lock leases, the async scheduler, web-session pruning, file
// versions' thinning and expiry, ACME certificates' renewal), each job
// that must run once among nodes under a Redis lease (lease.go), and closes
// everything it opened in order. The routes, authentication and connection
// limits are server's; server does not import this package.
package daemon
