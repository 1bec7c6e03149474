package upload

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"

	"netdisk/errs"
	"netdisk/meta"
)

var errNoRows = sql.ErrNoRows

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
		b, err := s.readRange(ctx, chunks, off, l)
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
	err = s.db.Tx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO upload_challenges(session_id, idx, nonce, proof, target, expires_ns) VALUES (?,?,?,?,?,?)
			ON CONFLICT(session_id, idx) DO UPDATE SET nonce = excluded.nonce, proof = excluded.proof, target = excluded.target, expires_ns = excluded.expires_ns`,
			ss.ID, index, ch.Nonce, Proof(ch.Nonce, parts), string(tb), s.now().Add(s.chTTL).UnixNano())
		return err
	})
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
	ss, err := s.load(ctx, s.db.ReadDB(), op, uid, id)
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
	if ss.State != stateOpen {
		if idx == -1 && ss.ResultHash != "" {
			return ProveResult{OK: true, Completed: true, Path: ss.Path}, nil // a retried right proof
		}
		return ProveResult{}, errs.Errorf(op, errs.Conflict, "the session is already merged")
	}
	var want, tjson string
	var expires int64
	found := false
	err = s.db.Tx(ctx, func(tx *sql.Tx) error {
		var storedNonce string
		err := tx.QueryRowContext(ctx, `SELECT nonce, proof, target, expires_ns FROM upload_challenges WHERE session_id = ? AND idx = ?`,
			ss.ID, idx).Scan(&storedNonce, &want, &tjson, &expires)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		found = storedNonce == nonce
		_, err = tx.ExecContext(ctx, `DELETE FROM upload_challenges WHERE session_id = ? AND idx = ?`, ss.ID, idx)
		return err
	})
	if err != nil {
		return ProveResult{}, wrap(op, "", err)
	}
	if !found || expires < s.now().UnixNano() || subtle.ConstantTimeCompare([]byte(want), []byte(proof)) != 1 {
		return ProveResult{}, nil
	}
	var t target
	if err := json.Unmarshal([]byte(tjson), &t); err != nil {
		return ProveResult{}, wrap(op, "", err)
	}
	if idx >= 0 {
		if len(t.Chunks) != 1 {
			return ProveResult{}, nil
		}
		ok, err := s.claim(ctx, ss, idx, t.Chunks[0])
		return ProveResult{OK: ok}, err
	}
	res, err := s.commit(ctx, ss, t.Chunks, t.FileHash)
	if errors.Is(err, errGone) {
		return ProveResult{}, nil
	}
	if err != nil {
		return ProveResult{}, err
	}
	return ProveResult{OK: true, Completed: true, Path: res.Path}, nil
}
