package chunker

//go:generate python3 _asm/md5dual.py

import (
	"crypto/md5"
	"encoding"
	"encoding/binary"
	"hash"
)

// An upload needs two MD5s of the same bytes: the chunk's (its identity) and
// the whole file's (what WebDAV and ownCloud clients compare). MD5 is one
// chain of dependent steps, so one digest leaves most of a core's execution
// units idle; two digests whose steps interleave in one loop over the same
// message words cost far less than two passes (BenchmarkMD5Pair: on the EPYC
// this was measured on, 605 MB per CPU-second for both against 775 for one
// crypto/md5, so 36% less CPU for the pair). md5-simd's lanes do not help at
// two streams (BenchmarkMD5Lanes: 677 per CPU-second for two, below
// crypto/md5's 775 for one, and better only from eight streams on).

// md5StateSize is the length of crypto/md5's marshalled state: the magic, four
// big-endian words of state, the 64-byte block buffer, the big-endian length.
const (
	md5Magic     = "md5\x01"
	md5StateSize = len(md5Magic) + 4*4 + md5.BlockSize + 8
)

type md5Codec interface {
	encoding.BinaryAppender
	encoding.BinaryUnmarshaler
}

// WriteMD5Pair writes p to a and b, two digests made by crypto/md5.New
// (others are written to one after the other). When both have seen the same
// length modulo the block size (a chunk's digest and its file's, chunks being
// cut at multiples of 64 bytes), the whole blocks of p go through one
// interleaved loop for both.
func WriteMD5Pair(a, b hash.Hash, p []byte) {
	ca, okA := a.(md5Codec)
	cb, okB := b.(md5Codec)
	if !okA || !okB || len(p) < 2*md5.BlockSize {
		a.Write(p)
		b.Write(p)
		return
	}
	var bufA, bufB [md5StateSize]byte
	sa, errA := ca.AppendBinary(bufA[:0])
	sb, errB := cb.AppendBinary(bufB[:0])
	if errA != nil || errB != nil || len(sa) != md5StateSize || len(sb) != md5StateSize ||
		string(sa[:len(md5Magic)]) != md5Magic || string(sb[:len(md5Magic)]) != md5Magic {
		a.Write(p)
		b.Write(p)
		return
	}
	lenOff := md5StateSize - 8
	la, lb := binary.BigEndian.Uint64(sa[lenOff:]), binary.BigEndian.Uint64(sb[lenOff:])
	if la%md5.BlockSize != lb%md5.BlockSize {
		a.Write(p)
		b.Write(p)
		return
	}
	// Each digest finishes its own partial block (their buffered bytes may
	// differ); from there both are at a block boundary.
	if nx := la % md5.BlockSize; nx != 0 {
		k := md5.BlockSize - int(nx)
		a.Write(p[:k])
		b.Write(p[:k])
		p = p[k:]
		la += uint64(k)
		lb += uint64(k)
		sa, _ = ca.AppendBinary(bufA[:0])
		sb, _ = cb.AppendBinary(bufB[:0])
	}
	bulk := len(p) &^ (md5.BlockSize - 1)
	var stA, stB [4]uint32
	for i := range 4 {
		stA[i] = binary.BigEndian.Uint32(sa[len(md5Magic)+4*i:])
		stB[i] = binary.BigEndian.Uint32(sb[len(md5Magic)+4*i:])
	}
	blockDual(&stA, &stB, p[:bulk])
	for i := range 4 {
		binary.BigEndian.PutUint32(sa[len(md5Magic)+4*i:], stA[i])
		binary.BigEndian.PutUint32(sb[len(md5Magic)+4*i:], stB[i])
	}
	// At a block boundary the buffer holds nothing: its bytes are ignored.
	binary.BigEndian.PutUint64(sa[lenOff:], la+uint64(bulk))
	binary.BigEndian.PutUint64(sb[lenOff:], lb+uint64(bulk))
	if err := ca.UnmarshalBinary(sa); err != nil {
		panic("chunker: crypto/md5 refused its own state: " + err.Error())
	}
	if err := cb.UnmarshalBinary(sb); err != nil {
		panic("chunker: crypto/md5 refused its own state: " + err.Error())
	}
	a.Write(p[bulk:])
	b.Write(p[bulk:])
}
