// Package chunker holds netdisk's content identity and the client upload
// pipeline built on it.
//
// Content identity (identity.go): how bytes are cut into chunks and how chunks
// and files are named. Every transport (WebDAV PUT, the upload API, FUSE) cuts
// a file at multiples of the same chunk size, so identical content always
// yields identical chunks. The names are part of the wire contract
// (shared/API.md): do not change them without changing the protocol.
//
// The client upload pipeline (pipeline.go, seed 000): a file is hashed chunk
// by chunk while a bounded queue offers each chunk by hash and sends it only
// when the remote lacks it, then the file is checked by hash (instant upload)
// or merged. It speaks to the server through Remote (remote.go), reports what
// it does as Events (events.go) and is tuned by Options (options.go). The
// server side of the protocol is not here: it lives in package upload.
package chunker
