package testutil

import (
	"crypto/md5"
	"crypto/rand"
	"encoding/hex"
)

// RandBytes returns n random bytes: incompressible content no other test
// stores, so nothing deduplicates against it by accident.
func RandBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b) // never fails: crypto/rand crashes the program instead
	return b
}

// MD5Hex returns the lowercase hex MD5 of b, the way a client names a chunk.
// Tests compute the hashes they expect here rather than with chunker, so an
// expected value never comes from the code under test.
func MD5Hex(b []byte) string {
	m := md5.Sum(b)
	return hex.EncodeToString(m[:])
}
