package mount

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"

	"netdisk/chunker"
	"netdisk/client"
)

// PipelineUploader stores a local file through the seed-000 upload pipeline
// (shared/API.md: init, patchHash per chunk and per file, prove,
// uploadChunk, merge), so content the server already holds sends no chunk
// bytes. It returns once merge (or the instant upload) has committed.
// When the client library grows its own Push this is where to switch.
func PipelineUploader(c *client.Client) func(ctx context.Context, local, path string) error {
	return func(ctx context.Context, local, p string) error {
		f, err := os.Open(local)
		if err != nil {
			return err
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			return err
		}
		if st.Size() == 0 {
			return c.JSON(ctx, http.MethodPut, "/api/v1/file/upload", url.Values{"path": {p}}, nil, nil)
		}
		var init struct {
			UploadID  string  `json:"uploadId"`
			ChunkSize int64   `json:"chunkSize"`
			Uploaded  []int64 `json:"uploaded"`
		}
		if err := c.JSON(ctx, http.MethodPost, "/api/v1/file/init", nil, map[string]any{"path": p, "size": st.Size()}, &init); err != nil {
			return err
		}
		have := map[int]bool{}
		for _, i := range init.Uploaded {
			have[int(i)] = true
		}
		r := &apiRemote{c: c, id: init.UploadID}
		_, err = chunker.Upload(ctx, f, st.Size(), r, chunker.Options{
			ChunkSize: init.ChunkSize, Concurrency: 3,
			Uploaded: func(i int) bool { return have[i] },
			Retries:  3,
		})
		return err
	}
}

type apiRemote struct {
	c  *client.Client
	id string
}

var _ chunker.Remote = (*apiRemote)(nil)

// permanent marks 4xx answers as not worth retrying.
func permanent(err error) error {
	if s := client.StatusOf(err); s >= 400 && s < 500 {
		return chunker.Permanent(err)
	}
	return err
}

// merged reports the answer to a chunk call that lost the race with the
// file check: the session was completed (instant upload), so there is
// nothing left to do for the chunk.
func merged(err error) bool {
	var e *client.Error
	return errors.As(err, &e) && e.Status == http.StatusConflict && strings.Contains(e.Message, "merged")
}

type checkAnswer struct {
	Exists    bool               `json:"exists"`
	Completed bool               `json:"completed"`
	Challenge *chunker.Challenge `json:"challenge"`
}

func (a checkAnswer) check() chunker.Check {
	return chunker.Check{Exists: a.Exists, Challenge: a.Challenge}
}

func (r *apiRemote) PatchChunk(ctx context.Context, ch chunker.Chunk) (chunker.Check, error) {
	var out checkAnswer
	err := r.c.JSON(ctx, http.MethodPost, "/api/v1/file/patchHash", nil,
		map[string]any{"uploadId": r.id, "index": ch.Index, "hash": ch.Hash}, &out)
	if merged(err) {
		return chunker.Check{Exists: true}, nil
	}
	return out.check(), permanent(err)
}

func (r *apiRemote) ProveChunk(ctx context.Context, ch chunker.Chunk, chal chunker.Challenge, data []byte) (bool, error) {
	proof, err := chunker.Proof(chal.Nonce, bytes.NewReader(data), chal.Ranges)
	if err != nil {
		return false, nil
	}
	var out struct {
		OK bool `json:"ok"`
	}
	err = r.c.JSON(ctx, http.MethodPost, "/api/v1/file/prove", nil,
		map[string]any{"uploadId": r.id, "index": ch.Index, "nonce": chal.Nonce, "proof": proof}, &out)
	if merged(err) {
		return true, nil
	}
	return out.OK, permanent(err)
}

func (r *apiRemote) UploadChunk(ctx context.Context, ch chunker.Chunk, data []byte) error {
	q := url.Values{"uploadId": {r.id}, "index": {strconv.Itoa(ch.Index)}, "hash": {ch.Hash}}
	req, err := r.c.NewRequest(ctx, http.MethodPut, "/api/v1/file/uploadChunk", q, bytes.NewReader(data))
	if err != nil {
		return err
	}
	req.ContentLength = int64(len(data))
	resp, err := r.c.Do(req)
	if merged(err) {
		return nil
	}
	if err != nil {
		return permanent(err)
	}
	io.Copy(io.Discard, resp.Body)
	return resp.Body.Close()
}

func (r *apiRemote) PatchFile(ctx context.Context, fileHash string) (chunker.Check, error) {
	var out checkAnswer
	err := r.c.JSON(ctx, http.MethodPost, "/api/v1/file/patchHash", nil,
		map[string]any{"uploadId": r.id, "fileHash": fileHash}, &out)
	return out.check(), permanent(err)
}

func (r *apiRemote) ProveFile(ctx context.Context, fileHash string, chal chunker.Challenge, file io.ReaderAt) (bool, error) {
	proof, err := chunker.Proof(chal.Nonce, file, chal.Ranges)
	if err != nil {
		return false, nil
	}
	var out struct {
		OK bool `json:"ok"`
	}
	err = r.c.JSON(ctx, http.MethodPost, "/api/v1/file/prove", nil,
		map[string]any{"uploadId": r.id, "nonce": chal.Nonce, "proof": proof}, &out)
	return out.OK, permanent(err)
}

func (r *apiRemote) Merge(ctx context.Context, fileHash string) error {
	err := r.c.JSON(ctx, http.MethodPost, "/api/v1/file/merge", nil, map[string]any{"uploadId": r.id, "fileHash": fileHash}, nil)
	if err != nil {
		return fmt.Errorf("merge: %w", permanent(err))
	}
	return nil
}
