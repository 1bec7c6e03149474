package drive_test

import (
	"bytes"
	"context"
	"testing"

	"netdisk/drive"
)

// readCount is a body that counts the bytes read from it.
type readCount struct {
	r *bytes.Reader
	n int
}

func (c *readCount) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// Instant upload through a share: a recipient holds the content of the
// files they read in it, so naming that content is instant, into their own
// tree or into the share; content the owner holds outside the share, or
// only the owner holds, is read from the body whatever the target (no
// oracle of the owner's files). An instant write into a writable share is
// the owner's, charged to the owner.
func TestShareInstantUpload(t *testing.T) {
	ctx := context.Background()
	for _, write := range []bool{false, true} {
		f, _ := shareFixture(t, write)
		a, b := f.a.ID, f.b.ID
		put := func(uid int64, p string, content []byte) (instant bool, read int) {
			t.Helper()
			h, sha := instantSums(content)
			body := &readCount{r: bytes.NewReader(content)}
			_, instant, err := f.d.PutFile(ctx, uid, p, drive.PutOptions{Size: int64(len(content)), FileHash: h, FileSHA256: sha}, body)
			must(t, err)
			return instant, body.n
		}
		shared := random(1, 3000) // alice's /docs/sub/b.txt, which bob reads in the share
		if instant, read := put(b, "/copy.bin", shared); !instant || read != 0 {
			t.Fatalf("write=%v: bob's upload of content he reads in the share: instant %v, %d bytes read", write, instant, read)
		}
		if got := f.get(t, b, "/copy.bin"); !bytes.Equal(got, shared) {
			t.Fatal("the instant copy reads back other bytes")
		}
		// Alice's /secret.txt is outside the share: not an oracle.
		if instant, read := put(b, "/guess.txt", []byte("alice only")); instant || read != len("alice only") {
			t.Fatalf("write=%v: bob's upload of content alice holds outside the share: instant %v, %d bytes read", write, instant, read)
		}
		if !write {
			continue
		}
		// Into the writable share: instant for what bob holds (his own
		// file), charged to alice; not for what only alice holds.
		qa0, err := f.d.QuotaOf(ctx, a)
		must(t, err)
		qb0, err := f.d.QuotaOf(ctx, b)
		must(t, err)
		own := random(2, 2500) // bob's /own.txt
		if instant, read := put(b, "/docs/from-bob.bin", own); !instant || read != 0 {
			t.Fatalf("bob's upload into the share of his own content: instant %v, %d bytes read", instant, read)
		}
		if got := f.get(t, a, "/docs/from-bob.bin"); !bytes.Equal(got, own) {
			t.Fatal("alice reads other bytes than bob's instant upload")
		}
		qa1, _ := f.d.QuotaOf(ctx, a)
		qb1, _ := f.d.QuotaOf(ctx, b)
		if qa1.Finished-qa0.Finished < int64(len(own)) || qb1.Finished != qb0.Finished {
			t.Fatalf("the instant upload into the share charged alice %d, bob %d bytes; want alice %d, bob 0", qa1.Finished-qa0.Finished, qb1.Finished-qb0.Finished, len(own))
		}
		f.put(t, a, "/secret2.txt", []byte("alice's other secret"))
		if instant, read := put(b, "/docs/guess.txt", []byte("alice's other secret")); instant || read != len("alice's other secret") {
			t.Fatalf("bob's upload into the share of content only alice holds: instant %v, %d bytes read", instant, read)
		}
		// The share's own content, uploaded into it again, is instant.
		if instant, _ := put(b, "/docs/sub/again.bin", shared); !instant {
			t.Fatal("bob's upload into the share of content in it: not instant")
		}
	}
}
