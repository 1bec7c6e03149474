//go:build !amd64 || purego

package chunker

func blockDual(s1, s2 *[4]uint32, p []byte) { blockDualGeneric(s1, s2, p) }
