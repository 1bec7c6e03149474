package mount

import "context"

// Fetch exposes the shared chunk fetch to the tests of package mount_test.
func (f *FS) Fetch(ctx context.Context, p, fileHash string, c ChunkRef) ([]byte, error) {
	return f.fetch(ctx, p, fileHash, c)
}

// Abandon lets go of the folder's lock without cleaning up, as the death of
// its process does.
func (s *Staging) Abandon() { s.lock.Close() }
