package upload

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"

	"netdisk/errs"
	"netdisk/meta"
)

// Proof-of-ownership parameters: a few short random ranges are enough to make
// a hash-only claim fail, and cheap for an honest client to answer.
const (
	challengeRanges = 3
	rangeLen        = 64
)

// Challenge asks the client to prove it holds content it claims by hash.
type Challenge struct {
	Nonce  string
	Ranges [][2]int64 // [offset, length] pairs
}

// target is what a right proof unlocks, stored with the challenge.
type target struct {
	FileHash string       `json:"fileHash,omitempty"`
	Chunks   []meta.Chunk `json:"chunks"`
}

// Proof computes the answer to a challenge over content: hex SHA-256 of the
// nonce's hex string followed by the bytes of each range in order. Clients
// compute the same over their own bytes.
func Proof(nonce string, ranges [][]byte) string {
	h := sha256.New()
	h.Write([]byte(nonce))
	for _, r := range ranges {
		h.Write(r)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func randN(n int64) int64 {
	if n <= 1 {
		return 0
	}
	var b [8]byte
	rand.Read(b[:])
	return int64(binary.LittleEndian.Uint64(b[:]) % uint64(n))
}

// challenge draws random ranges over chunks' content, computes the expected
// proof from the server's own copy and stores it for the session and index
// (-1: the whole file), replacing any earlier challenge there.
func (s *Service) challenge(ctx context.Context, ss session, index int64, chunks []meta.Chunk, fileHash string) (*Challenge, error) {
	var size int64
	for _, c := range chunks {
		size += c.Size
	}
	nb := make([]byte, 16)
	rand.Read(nb)
	ch := &Challenge{Nonce: hex.EncodeToString(nb)}
	var parts [][]byte
	for range challengeRanges {
		l := min(int64(rangeLen), size)
		off := randN(size - l + 1)
		b, err := s.d.ReadContent(ctx, chunks, off, l)
		if err != nil {
			return nil, err
		}
		ch.Ranges = append(ch.Ranges, [2]int64{off, l})
		parts = append(parts, b)
	}
	tb, err := json.Marshal(target{FileHash: fileHash, Chunks: chunks})
	if err != nil {
		return nil, err
	}
	err = s.db.PutChallenge(ctx, ss.ID, meta.Challenge{Index: index, Nonce: ch.Nonce, Proof: Proof(ch.Nonce, parts),
		Target: string(tb), Expires: s.now().Add(s.chTTL)})
	return ch, err
}

// ProveResult answers prove.
type ProveResult struct {
	OK        bool
	Completed bool
	Path      string
}

// Prove checks the answer to the pending challenge of index (nil: the whole
// file). A challenge is used once, right or wrong. A right proof counts the
// chunk as uploaded, or commits the file; a wrong, stale or unknown one is
// {OK: false}, and the client sends the bytes instead.
func (s *Service) Prove(ctx context.Context, uid int64, id string, index *int64, nonce, proof string) (ProveResult, error) {
	const op = "upload.Prove"
	mu := s.stripe(id)
	mu.Lock()
	defer mu.Unlock()
	ss, err := s.load(ctx, op, uid, id)
	if err != nil {
		return ProveResult{}, err
	}
	idx := int64(-1)
	if index != nil {
		if err := checkIndex(op, ss, *index); err != nil {
			return ProveResult{}, err
		}
		idx = *index
	}
	if !ss.open() {
		if idx == -1 && ss.ResultHash != "" {
			return ProveResult{OK: true, Completed: true, Path: ss.Path}, nil // a retried right proof
		}
		return ProveResult{}, errMerged(op)
	}
	// Single use: the challenge is gone whether the proof is right or not.
	stored, found, err := s.db.TakeChallenge(ctx, ss.ID, idx)
	if err != nil {
		return ProveResult{}, err
	}
	if !found || stored.Nonce != nonce || stored.Expires.Before(s.now()) ||
		subtle.ConstantTimeCompare([]byte(stored.Proof), []byte(proof)) != 1 {
		return ProveResult{}, nil
	}
	var t target
	if err := json.Unmarshal([]byte(stored.Target), &t); err != nil {
		return ProveResult{}, errs.E(op, errs.Other, "", err)
	}
	if idx >= 0 {
		if len(t.Chunks) != 1 {
			return ProveResult{}, nil
		}
		ok, err := s.claim(ctx, ss, idx, t.Chunks[0])
		return ProveResult{OK: ok}, err
	}
	res, err := s.commit(ctx, ss, t.Chunks, t.FileHash, false)
	if gone(err) {
		return ProveResult{}, nil
	}
	if err != nil {
		return ProveResult{}, err
	}
	return ProveResult{OK: true, Completed: true, Path: res.Path}, nil
}
