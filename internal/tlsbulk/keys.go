package tlsbulk

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/tls"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"sync"

	"golang.org/x/crypto/chacha20poly1305"
)

// serverTrafficLabel is the key-log label (NSS key log format, which
// crypto/tls writes to Config.KeyLogWriter) of the server's first
// application traffic secret in TLS 1.3.
const serverTrafficLabel = "SERVER_TRAFFIC_SECRET_0"

// secretCatcher is one connection's KeyLogWriter: it keeps the server's
// application traffic secret in memory, where the connection's sending half
// needs it, and drops every other line. Nothing is written anywhere.
type secretCatcher struct {
	mu     sync.Mutex
	secret []byte
	// ticketless: the connection's config sends no session ticket, so
	// no record precedes the first one sealed here.
	ticketless bool
}

func (s *secretCatcher) noTickets() {
	s.mu.Lock()
	s.ticketless = true
	s.mu.Unlock()
}

func (s *secretCatcher) Write(line []byte) (int, error) {
	f := bytes.Fields(line)
	if len(f) == 3 && string(f[0]) == serverTrafficLabel {
		secret := make([]byte, hex.DecodedLen(len(f[2])))
		if _, err := hex.Decode(secret, f[2]); err == nil {
			s.mu.Lock()
			s.secret = secret
			s.mu.Unlock()
		}
	}
	return len(line), nil
}

// take returns the server's application traffic secret if a handover may
// use it (nil otherwise), and forgets it.
func (s *secretCatcher) take() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	secret := s.secret
	s.secret = nil
	if !s.ticketless {
		return nil
	}
	return secret
}

// sealer encrypts TLS 1.3 records under one traffic secret (RFC 8446 §5.2,
// §5.3, §7.3): the key and IV are expanded from the secret, each record's
// nonce is the IV XOR its 64-bit sequence number.
type sealer struct {
	suite  uint16
	hash   func() hash.Hash
	secret []byte
	aead   cipher.AEAD
	iv     [12]byte
	seq    uint64
	nonce  [12]byte
}

var errSuite = errors.New("tlsbulk: cipher suite not handled")

// newSealer sets up the sending keys of suite from a traffic secret.
func newSealer(suite uint16, secret []byte) (*sealer, error) {
	s := &sealer{suite: suite}
	switch suite {
	case tls.TLS_AES_128_GCM_SHA256, tls.TLS_CHACHA20_POLY1305_SHA256:
		s.hash = sha256.New
	case tls.TLS_AES_256_GCM_SHA384:
		s.hash = sha512.New384
	default:
		return nil, errSuite
	}
	if len(secret) != s.hash().Size() {
		return nil, fmt.Errorf("tlsbulk: traffic secret of %d bytes for %s", len(secret), tls.CipherSuiteName(suite))
	}
	return s, s.setSecret(secret)
}

// setSecret makes secret the current one, with its key and IV, from
// sequence number zero.
func (s *sealer) setSecret(secret []byte) error {
	keyLen := 16
	if s.suite != tls.TLS_AES_128_GCM_SHA256 {
		keyLen = 32
	}
	key, err := expandLabel(s.hash, secret, "key", keyLen)
	if err != nil {
		return err
	}
	iv, err := expandLabel(s.hash, secret, "iv", len(s.iv))
	if err != nil {
		return err
	}
	var aead cipher.AEAD
	if s.suite == tls.TLS_CHACHA20_POLY1305_SHA256 {
		aead, err = chacha20poly1305.New(key)
	} else {
		var b cipher.Block
		if b, err = aes.NewCipher(key); err == nil {
			aead, err = cipher.NewGCM(b)
		}
	}
	if err != nil {
		return err
	}
	s.secret, s.aead, s.seq = secret, aead, 0
	copy(s.iv[:], iv)
	return nil
}

// update moves to the next traffic secret (a KeyUpdate, RFC 8446 §7.2).
func (s *sealer) update() error {
	next, err := expandLabel(s.hash, s.secret, "traffic upd", s.hash().Size())
	if err != nil {
		return err
	}
	return s.setSecret(next)
}

// seal writes one record into dst, which has room for maxOverhead
// bytes more than the plaintext: the header, then plain (copied unless it
// already sits at dst[headerLen:]) followed by its content type, sealed.
// plain's byte after its end is not touched.
func (s *sealer) seal(dst []byte, plain []byte, contentType byte) int {
	n := len(plain) + 1 + s.aead.Overhead()
	dst[0], dst[1], dst[2] = recordTypeApplicationData, 3, 3
	binary.BigEndian.PutUint16(dst[3:5], uint16(n))
	body := dst[headerLen : headerLen+len(plain)+1]
	copy(body, plain) // a no-op when plain is already in place
	body[len(plain)] = contentType
	s.aead.Seal(body[:0], s.nextNonce(), body, dst[:headerLen])
	return headerLen + n
}

// sealFrom seals src[:m] into dst without copying it first: the content
// type goes in src[m] for the time of the sealing (src must have that byte,
// and no one else may be reading src meanwhile). It saves the copy of every
// payload that seal makes.
func (s *sealer) sealFrom(dst []byte, src []byte, m int) int {
	n := m + 1 + s.aead.Overhead()
	dst[0], dst[1], dst[2] = recordTypeApplicationData, 3, 3
	binary.BigEndian.PutUint16(dst[3:5], uint16(n))
	saved := src[m]
	src[m] = recordTypeApplicationData
	s.aead.Seal(dst[headerLen:headerLen], s.nextNonce(), src[:m+1], dst[:headerLen])
	src[m] = saved
	return headerLen + n
}

func (s *sealer) nextNonce() []byte {
	s.nonce = s.iv
	var seq [8]byte
	binary.BigEndian.PutUint64(seq[:], s.seq)
	for i, b := range seq {
		s.nonce[4+i] ^= b
	}
	s.seq++
	return s.nonce[:]
}

// expandLabel is TLS 1.3's HKDF-Expand-Label with an empty context
// (RFC 8446 §7.1).
func expandLabel(h func() hash.Hash, secret []byte, label string, length int) ([]byte, error) {
	full := "tls13 " + label
	info := make([]byte, 0, 4+len(full))
	info = binary.BigEndian.AppendUint16(info, uint16(length))
	info = append(info, byte(len(full)))
	info = append(info, full...)
	info = append(info, 0) // empty context
	return hkdf.Expand(h, secret, string(info), length)
}
