//go:build !purego

package chunker

// blockDual is blockDualGeneric in assembly (md5dual_amd64.s): crypto/md5's
// amd64 block with a second state's instructions interleaved.
//
//go:noescape
func blockDual(s1, s2 *[4]uint32, p []byte)
