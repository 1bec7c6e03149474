package apitype

// The upload protocol of shared/API.md (/api/v1/file/…).

// InitRequest is the body of POST /api/v1/file/init. Path and Size are
// pointers so the server tells a missing field from a zero one.
type InitRequest struct {
	Path     *string `json:"path"`
	Size     *int64  `json:"size"`
	FileHash string  `json:"fileHash,omitempty"`
}

// Session is an upload session as init and GET /api/v1/file/session answer
// it: Uploaded lists the chunk indexes the server already holds for it.
type Session struct {
	UploadID    string  `json:"uploadId"`
	ChunkSize   int64   `json:"chunkSize"`
	TotalChunks int64   `json:"totalChunks"`
	Uploaded    []int64 `json:"uploaded"`
}

// PatchHashRequest is the body of POST /api/v1/file/patchHash: with Index
// (and Hash) it asks about a chunk, with FileHash about the whole file.
//
// SHA256 (of the chunk's bytes) and FileSHA256 (chunker.FileSHA256) are
// netdisk's extension: MD5 names content but two contents can share it, so
// the server binds held content only to a client that names it by these;
// without them the answer is always "send the bytes".
type PatchHashRequest struct {
	UploadID   string `json:"uploadId"`
	Index      *int64 `json:"index,omitempty"`
	Hash       string `json:"hash,omitempty"`
	SHA256     string `json:"sha256,omitempty"`
	FileHash   string `json:"fileHash,omitempty"`
	FileSHA256 string `json:"fileSha256,omitempty"`
}

// Challenge asks the client to prove it holds content it claims by hash:
// Ranges are [offset, length] pairs within the chunk (chunk checks) or the
// whole file (file checks).
type Challenge struct {
	Nonce  string     `json:"nonce"`
	Ranges [][2]int64 `json:"ranges"`
}

// PatchHashResult answers patchHash: Exists alone means the content counts
// as uploaded; with Completed the file is committed at Path; with Challenge
// the client proves possession (ProveRequest) or sends the bytes.
type PatchHashResult struct {
	Exists    bool       `json:"exists"`
	Completed bool       `json:"completed,omitempty"`
	Path      string     `json:"path,omitempty"`
	Challenge *Challenge `json:"challenge,omitempty"`
}

// ProveRequest is the body of POST /api/v1/file/prove: Proof is hex
// SHA-256 of the nonce's hex string followed by the bytes of each
// challenged range, in order. Without Index it proves the whole file.
type ProveRequest struct {
	UploadID string `json:"uploadId"`
	Index    *int64 `json:"index,omitempty"`
	Nonce    string `json:"nonce"`
	Proof    string `json:"proof"`
}

// ProveResult answers prove; a wrong or stale proof is OK false, not an
// error.
type ProveResult struct {
	OK        bool   `json:"ok"`
	Completed bool   `json:"completed,omitempty"`
	Path      string `json:"path,omitempty"`
}

// ChunkReceived answers PUT /api/v1/file/uploadChunk.
type ChunkReceived struct {
	Index int64 `json:"index"`
}

// MergeRequest is the body of POST /api/v1/file/merge. FileSHA256, when
// given, must also match the chunks held (by their SHA-256s): a resumed
// session may hold other bytes with the same MD5s.
type MergeRequest struct {
	UploadID   string `json:"uploadId"`
	FileHash   string `json:"fileHash"`
	FileSHA256 string `json:"fileSha256,omitempty"`
}

// FileResult is a committed file: the answer of merge and of the one-request
// upload (PUT /api/v1/file/upload).
type FileResult struct {
	Path     string `json:"path"`
	Size     int64  `json:"size"`
	FileHash string `json:"fileHash"`
	// Instant is set by the one-request upload given a fileHash the user
	// already holds: committed without the body being read.
	Instant bool `json:"instant,omitempty"`
	// MTime and Mode (permission bits) of the version committed, in the
	// one-request upload's answer: a client that set them (the mtime and
	// mode parameters) or shows them (the FUSE mount) needs no stat after.
	MTime *Time   `json:"mtime,omitempty"`
	Mode  *uint32 `json:"mode,omitempty"`
}

// OpenUpload is one of the caller's open upload sessions, as GET
// /api/v1/file/sessions lists them (an extension, docs/API.md).
type OpenUpload struct {
	UploadID string `json:"uploadId"`
	Path     string `json:"path"`
	Size     int64  `json:"size"`     // declared: what it reserves of the quota
	Received int64  `json:"received"` // bytes of the chunks held
	Touched  Time   `json:"touched"`  // last use
	Expires  Time   `json:"expires"`  // when it expires unless used again
}

// OpenUploads answers GET /api/v1/file/sessions, most recently used first.
type OpenUploads struct {
	Sessions []OpenUpload `json:"sessions"`
}
