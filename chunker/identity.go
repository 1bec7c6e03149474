package chunker

// Content identity: the chunk cut and the chunk and file hashes (see the
// package doc). Changing any of it changes the protocol.

import (
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"hash"
)

const (
	// DefaultChunkSize is the server's chunk size unless configured otherwise (seed 004: 4 MiB).
	DefaultChunkSize = 4 << 20
	// SmallFileLimit is the size under which a file may be sent in one request (seed 004: 8 MiB).
	SmallFileLimit = 8 << 20
)

// Sum is a chunk's identity: MD5 is the protocol's name for the bytes, SHA-256
// is what storage trusts, so two chunks sharing an MD5 are never confused.
type Sum struct {
	MD5    string // lowercase hex
	SHA256 string // lowercase hex
	Size   int64
}

// HashChunk returns the identity of one chunk's bytes.
func HashChunk(b []byte) Sum {
	m := md5.Sum(b)
	s := sha256.Sum256(b)
	return Sum{MD5: hex.EncodeToString(m[:]), SHA256: hex.EncodeToString(s[:]), Size: int64(len(b))}
}

// ChunkHasher computes a chunk's identity (HashChunk) from its bytes given in
// pieces, as they arrive: a receiver hashes each piece while it is still in
// the CPU's cache, instead of going over the whole chunk twice afterwards.
type ChunkHasher struct {
	md5, sha256 hash.Hash
	n           int64
}

// NewChunkHasher returns a ChunkHasher of no bytes yet.
func NewChunkHasher() *ChunkHasher {
	return &ChunkHasher{md5: md5.New(), sha256: sha256.New()}
}

// Write adds p to the chunk; it never fails.
func (h *ChunkHasher) Write(p []byte) (int, error) {
	h.md5.Write(p)
	h.sha256.Write(p)
	h.n += int64(len(p))
	return len(p), nil
}

// Sum returns the identity of the bytes written so far.
func (h *ChunkHasher) Sum() Sum {
	var m [md5.Size]byte
	var s [sha256.Size]byte
	return Sum{MD5: hex.EncodeToString(h.md5.Sum(m[:0])), SHA256: hex.EncodeToString(h.sha256.Sum(s[:0])), Size: h.n}
}

// ChunkMD5 returns the lowercase hex MD5 of b, the protocol's chunk hash.
func ChunkMD5(b []byte) string {
	m := md5.Sum(b)
	return hex.EncodeToString(m[:])
}

// ValidHash reports whether h is a hash as the protocol writes it (a chunk
// MD5, a file hash): 32 lowercase hex digits.
func ValidHash(h string) bool { return lowerHex(h, 2*md5.Size) }

// ValidSHA256 reports whether h is a SHA-256 as the protocol writes it (a
// chunk's "sha256", a "fileSha256"): 64 lowercase hex digits.
func ValidSHA256(h string) bool { return lowerHex(h, 2*sha256.Size) }

// lowerHex reports whether h is n lowercase hex digits.
func lowerHex(h string, n int) bool {
	if len(h) != n {
		return false
	}
	for _, c := range h {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// FileSHA256 is a file's byte-exact name: the lowercase hex SHA-256 of the
// concatenation, in order, of its chunks' lowercase hex SHA-256 strings (the
// file hash's construction with SHA-256 for MD5). MD5 names content on the
// wire but two different contents can share it (testdata/md5collision), so
// an instant upload binds a file only when the client names it by this too;
// the server computes it from the SHA-256s it keeps per chunk, without
// reading the bytes. The empty file's is the SHA-256 of the empty string.
func FileSHA256(chunkSHA256s []string) string {
	h := sha256.New()
	for _, c := range chunkSHA256s {
		h.Write([]byte(c))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// FileHasher computes a file hash incrementally: MD5 over the concatenation of
// the chunk hashes' hex strings, in order (what Spark-MD5's append of the hex
// strings gives). The zero chunk list gives MD5("").
type FileHasher struct{ h hash.Hash }

// NewFileHasher returns an empty FileHasher.
func NewFileHasher() *FileHasher { return &FileHasher{h: md5.New()} }

// Add appends the next chunk's hex MD5.
func (f *FileHasher) Add(chunkMD5 string) { f.h.Write([]byte(chunkMD5)) }

// Sum returns the file hash of the chunks added so far.
func (f *FileHasher) Sum() string { return hex.EncodeToString(f.h.Sum(nil)) }

// FileHash returns the file hash of the given ordered chunk hashes.
func FileHash(chunkMD5s []string) string {
	f := NewFileHasher()
	for _, c := range chunkMD5s {
		f.Add(c)
	}
	return f.Sum()
}

// ChunkCount returns how many chunks a file of size bytes has (0 for an empty file).
func ChunkCount(size, chunkSize int64) int64 {
	if size <= 0 {
		return 0
	}
	return (size + chunkSize - 1) / chunkSize
}

// ChunkLen returns the length of chunk index of a file of size bytes.
func ChunkLen(size, chunkSize, index int64) int64 {
	off := index * chunkSize
	if off >= size {
		return 0
	}
	return min(chunkSize, size-off)
}
