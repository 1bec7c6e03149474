package chunker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"

	"netdisk/apitype"
)

// Challenge asks the client to prove it holds some content: ranges are
// [offset, length] pairs within the chunk (chunk checks) or the file (file
// checks). It is the API's wire type, named here for Remote.
type Challenge = apitype.Challenge

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
	Hash   string // lowercase hex MD5, the protocol's name
	SHA256 string // lowercase hex SHA-256: what proves the bytes (see FileSum)
}

// FileSum names the whole file being uploaded: Hash is the protocol's file
// hash (FileHash, made of MD5s), SHA256 its byte-exact name (FileSHA256).
// Two contents can share an MD5, so a remote binds content it already
// holds only when the SHA-256 matches too.
type FileSum struct {
	Hash   string
	SHA256 string
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
	FileChecker
	// Merge commits the chunks as the file. An error wrapping
	// ErrContentChanged says the session's chunks are not the file's.
	Merge(ctx context.Context, f FileSum) error
}

// FileChecker is the file half of patchHash: is this content already on the
// remote? PatchFile answering Exists without a Challenge means the remote
// committed the file; with one, ProveFile answers it over the file's bytes.
type FileChecker interface {
	PatchFile(ctx context.Context, f FileSum) (Check, error)
	ProveFile(ctx context.Context, f FileSum, ch Challenge, file io.ReaderAt) (bool, error)
}

// ErrContentChanged is wrapped by a Merge error when the chunks the session
// holds do not make the file hash given: typically a resumed session holding
// chunks of an older version of a file that changed since.
var ErrContentChanged = errors.New("the session's chunks are not the file's content")

// Restarter is implemented by a Remote that can begin the upload again in a
// fresh session, promising fileHash. The pipeline calls it once, after a merge
// failed with ErrContentChanged, then checks every chunk again by hash in the
// new session (see MergeFailed).
type Restarter interface {
	Restart(ctx context.Context, fileHash string) error
}

// checkFile is patchHash on the file, then the proof when asked; retry runs
// each call under the caller's policy.
func checkFile(ctx context.Context, r FileChecker, f FileSum, file io.ReaderAt, retry func(context.Context, func(context.Context) error) error) (bool, error) {
	var chk Check
	err := retry(ctx, func(ctx context.Context) (err error) {
		chk, err = r.PatchFile(ctx, f)
		return err
	})
	if err != nil || !chk.Exists {
		return false, err
	}
	if chk.Challenge == nil {
		return true, nil
	}
	var ok bool
	err = retry(ctx, func(ctx context.Context) (err error) {
		ok, err = r.ProveFile(ctx, f, *chk.Challenge, file)
		return err
	})
	return ok, err
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
