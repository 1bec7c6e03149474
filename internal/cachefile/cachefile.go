// Package cachefile writes the files of local caches: whole or not at all
// to any reader, but not durable (no fsync), because a cache may lose an
// entry in a crash and checks what it reads against its key anyway. What
// must survive a crash is written by internal/atomicfile instead.
package cachefile

import (
	"io/fs"
	"os"
)

// Publish writes data to tmp, a new temporary file in the folder of dst,
// closes it and renames it to dst, so that a reader in this process or
// another sees either the old dst (or none) or all of data. It returns what
// the written file's stat said before the rename (the identity of the file
// now at dst). On any failure tmp is removed and dst is left as it was.
func Publish(tmp *os.File, data []byte, dst string) (fs.FileInfo, error) {
	_, err := tmp.Write(data)
	var info fs.FileInfo
	if err == nil {
		info, err = tmp.Stat()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), dst)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return nil, err
	}
	return info, nil
}
