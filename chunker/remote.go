package chunker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
)

// Challenge asks the client to prove it holds some content: ranges are
// [offset, length] pairs within the chunk (chunk checks) or the file (file checks).
type Challenge struct {
	Nonce  string     `json:"nonce"`
	Ranges [][2]int64 `json:"ranges"`
}

// Check is the remote's answer to a patchHash.
type Check struct {
	Exists bool
	// Challenge is set when the remote holds the content but wants a proof first.
	Challenge *Challenge
}

// Chunk names one chunk of the file being uploaded.
type Chunk struct {
	Index  int
	Offset int64
	Size   int64
	Hash   string // lowercase hex MD5
}

// Remote is the per-chunk and per-file half of the upload protocol, bound to
// one upload session. Implementations must be safe for concurrent use: up to
// Concurrency chunk calls run at once, beside one file call.
//
// Errors: the pipeline retries any error that Options.Retryable accepts (by
// default everything except context cancellation and errors marked with
// Permanent). A wrong proof is not an error: ProveChunk/ProveFile return false.
type Remote interface {
	PatchChunk(ctx context.Context, c Chunk) (Check, error)
	ProveChunk(ctx context.Context, c Chunk, ch Challenge, data []byte) (bool, error)
	UploadChunk(ctx context.Context, c Chunk, data []byte) error
	// PatchFile: Exists without a Challenge means the remote committed the file.
	PatchFile(ctx context.Context, fileHash string) (Check, error)
	ProveFile(ctx context.Context, fileHash string, ch Challenge, file io.ReaderAt) (bool, error)
	Merge(ctx context.Context, fileHash string) error
}

// Proof answers a challenge: hex SHA-256 of the nonce's hex string followed by
// the bytes of each range of r, in order (shared/API.md).
func Proof(nonce string, r io.ReaderAt, ranges [][2]int64) (string, error) {
	h := sha256.New()
	h.Write([]byte(nonce))
	for _, rg := range ranges {
		if rg[0] < 0 || rg[1] < 0 {
			return "", fmt.Errorf("challenge range %v is negative", rg)
		}
		if _, err := io.Copy(h, io.NewSectionReader(r, rg[0], rg[1])); err != nil {
			return "", fmt.Errorf("read challenged range %v: %w", rg, err)
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
