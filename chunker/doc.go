// Package chunker holds netdisk's content identity and the client upload
// pipeline built on it.
//
// Content identity (identity.go): how bytes are cut into chunks and how chunks
// and files are named. Every transport (WebDAV PUT, the upload API, FUSE) cuts
// a file at multiples of the same chunk size, so identical content always
// yields identical chunks. The names are part of the wire contract
// (shared/API.md): do not change them without changing the protocol. MD5
// names content on the wire; SHA-256 (Sum.SHA256, FileSHA256) is what tells
// two contents sharing an MD5 apart, and the server binds content it holds
// to an upload only when the client names it by SHA-256 too.
//
// The client upload pipeline (pipeline.go, seed 000): a file is hashed chunk
// by chunk while a bounded queue offers each chunk by hash and sends it only
// when the remote lacks it, then the file is checked by hash (instant upload)
// or merged. It speaks to the server through Remote (remote.go), reports what
// it does as Events (events.go) and is tuned by Options (options.go). The
// server side of the protocol is not here: it lives in package upload.
package chunker
