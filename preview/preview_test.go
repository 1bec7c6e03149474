package preview

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"image/jpeg"
	"runtime"
	"sync"
	"testing"
	"time"

	"netdisk/drive"
	"netdisk/drive/drivetest"
	"netdisk/errs"
	"netdisk/meta"
	"netdisk/testutil"
	"netdisk/thumb"
)

func picture(w, h int, c color.RGBA) []byte {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			img.SetRGBA(x, y, color.RGBA{c.R, uint8(x), uint8(y), 255})
		}
	}
	var b bytes.Buffer
	jpeg.Encode(&b, img, nil)
	return b.Bytes()
}

type rig struct {
	env   *drivetest.Env
	d     *drive.Drive
	s     *Service
	dir   string
	clock *testutil.Clock
}

func newRig(t *testing.T, maxBytes int64) *rig {
	clock := testutil.NewClock(time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC))
	env := drivetest.New(t, drivetest.Options{Clock: clock})
	r := &rig{env: env, d: env.Drive, dir: t.TempDir(), clock: clock}
	r.reopen(t, maxBytes)
	return r
}

func (r *rig) reopen(t *testing.T, maxBytes int64) { r.reopenWith(t, maxBytes, thumb.Limits{}) }

func (r *rig) reopenWith(t *testing.T, maxBytes int64, l thumb.Limits) {
	if r.s != nil {
		r.s.Close()
	}
	s, err := Open(Config{Drive: r.d, Dir: r.dir, MaxBytes: maxBytes, Now: r.clock.Now, Limits: l})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	r.s = s
}

func (r *rig) put(t *testing.T, uid int64, p string, data []byte) meta.Node {
	t.Helper()
	n, _, err := r.d.PutFile(context.Background(), uid, p, drive.PutOptions{Size: int64(len(data))}, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func (r *rig) thumb(t *testing.T, uid int64, p string, size int) (Preview, error) {
	t.Helper()
	ctx := context.Background()
	n, err := r.s.Stat(ctx, uid, p)
	if err != nil {
		return Preview{}, err
	}
	return r.s.Thumbnail(ctx, uid, n, size)
}

func (r *rig) counts() [3]int64 {
	return [3]int64{r.s.Made.Load(), r.s.Cached.Load(), r.s.Refused.Load()}
}

// A content's thumbnail is made once per size: a copy, a second user with
// the same bytes and a restart of the node cost nothing; a changed file is
// new content with a new thumbnail and a new ETag.
func TestMadeOncePerContent(t *testing.T) {
	r := newRig(t, 0)
	ctx := context.Background()
	alice := r.env.AddUser(t, "alice", 0)
	bob := r.env.AddUser(t, "bob", 0)
	img := picture(600, 400, color.RGBA{R: 200})
	r.put(t, alice.ID, "/a.jpg", img)
	if err := r.d.Copy(ctx, alice.ID, "/a.jpg", "/copy.jpg", false, false); err != nil {
		t.Fatal(err)
	}
	r.put(t, bob.ID, "/theirs.jpg", img)

	first, err := r.thumb(t, alice.ID, "/a.jpg", 200)
	if err != nil {
		t.Fatal(err)
	}
	cfg, _, err := image.DecodeConfig(bytes.NewReader(first.Data))
	if err != nil || cfg.Width != 256 || cfg.Height != 170 || first.ContentType != "image/jpeg" {
		t.Fatalf("thumbnail %+v, %v (%s)", cfg, err, first.ContentType)
	}
	for _, c := range []struct {
		uid int64
		p   string
	}{{alice.ID, "/copy.jpg"}, {bob.ID, "/theirs.jpg"}, {alice.ID, "/a.jpg"}} {
		p, err := r.thumb(t, c.uid, c.p, 256)
		if err != nil || !bytes.Equal(p.Data, first.Data) {
			t.Fatalf("%s: %v", c.p, err)
		}
	}
	if got := r.counts(); got != [3]int64{1, 3, 0} {
		t.Fatalf("made, cached, refused = %v, want [1 3 0]", got)
	}
	// Another size is another thumbnail.
	small, err := r.thumb(t, alice.ID, "/a.jpg", 64)
	if err != nil || small.ETag == first.ETag {
		t.Fatalf("64: %v, etag %s (256: %s)", err, small.ETag, first.ETag)
	}
	// The folder survives a restart.
	r.reopen(t, 0)
	if _, err := r.thumb(t, bob.ID, "/theirs.jpg", 256); err != nil || r.counts() != [3]int64{0, 1, 0} {
		t.Fatalf("after reopening: %v, counts %v", err, r.counts())
	}
	// A changed file gets a new thumbnail.
	r.put(t, alice.ID, "/a.jpg", picture(100, 300, color.RGBA{B: 200}))
	changed, err := r.thumb(t, alice.ID, "/a.jpg", 256)
	if err != nil || changed.ETag == first.ETag || bytes.Equal(changed.Data, first.Data) {
		t.Fatalf("changed: %v, etag %s", err, changed.ETag)
	}
	if cfg, _, _ := image.DecodeConfig(bytes.NewReader(changed.Data)); cfg.Width != 85 || cfg.Height != 256 {
		t.Fatalf("changed thumbnail %dx%d", cfg.Width, cfg.Height)
	}
}

// Concurrent requests for one missing thumbnail make it once.
func TestConcurrentMakeOnce(t *testing.T) {
	r := newRig(t, 0)
	alice := r.env.AddUser(t, "alice", 0)
	bob := r.env.AddUser(t, "bob", 0)
	img := picture(800, 600, color.RGBA{G: 100})
	r.put(t, alice.ID, "/x.jpg", img)
	r.put(t, bob.ID, "/y.jpg", img)
	const n = 8
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// The maker waits until every request waits for it.
	r.s.testHookMake = func() {
		for r.s.waiting.Load() < n && ctx.Err() == nil {
			runtime.Gosched()
		}
	}
	var wg sync.WaitGroup
	errc := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			uid, p := alice.ID, "/x.jpg"
			if i%2 == 1 {
				uid, p = bob.ID, "/y.jpg"
			}
			nd, err := r.s.Stat(ctx, uid, p)
			if err == nil {
				_, err = r.s.Thumbnail(ctx, uid, nd, 256)
			}
			errc <- err
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		if err != nil {
			t.Fatal(err)
		}
	}
	if ctx.Err() != nil {
		t.Fatal("the requests did not all wait for one maker")
	}
	if got := r.counts(); got[0] != 1 {
		t.Fatalf("made %d thumbnails for %d concurrent requests of one content", got[0], n)
	}
}

// What gets no thumbnail is refused with the right kind, and a refused
// image is judged once.
func TestRefusals(t *testing.T) {
	r := newRig(t, 0)
	ctx := context.Background()
	alice := r.env.AddUser(t, "alice", 0)
	bob := r.env.AddUser(t, "bob", 0)
	r.put(t, alice.ID, "/bomb.png", testutil.PNGBomb(60000, 60000))
	r.put(t, alice.ID, "/notes.txt", []byte("hello"))
	r.put(t, alice.ID, "/cut.jpg", picture(300, 300, color.RGBA{})[:500])
	if _, err := r.d.Mkdir(ctx, alice.ID, "/dir"); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/bomb.png", "/notes.txt", "/cut.jpg", "/bomb.png"} {
		if _, err := r.thumb(t, alice.ID, p, 256); !errs.Is(err, errs.Unsupported) {
			t.Errorf("%s: %v, want Unsupported", p, err)
		}
	}
	if got := r.counts(); got != [3]int64{0, 0, 4} {
		t.Errorf("counts %v, want 4 refusals", got)
	}
	if _, err := r.thumb(t, alice.ID, "/dir", 256); !errs.Is(err, errs.Invalid) {
		t.Errorf("folder: %v, want Invalid", err)
	}
	if _, err := r.thumb(t, alice.ID, "/missing.jpg", 256); !errs.Is(err, errs.NotFound) {
		t.Errorf("missing: %v, want NotFound", err)
	}
	n, err := r.d.Stat(ctx, alice.ID, "/bomb.png")
	if err != nil {
		t.Fatal(err)
	}
	_, errOther := r.s.StatID(ctx, bob.ID, n.ID)
	_, errNone := r.s.StatID(ctx, bob.ID, n.ID+999)
	if !errs.Is(errOther, errs.NotFound) || errs.Message(errOther) != errs.Message(errNone) {
		t.Errorf("another user's id: %v; unknown id: %v", errOther, errNone)
	}
}

// The folder stays under its bound: the least recently used go first.
func TestCacheBound(t *testing.T) {
	r := newRig(t, 0)
	alice := r.env.AddUser(t, "alice", 0)
	var sizes []int
	for i := range 6 {
		r.put(t, alice.ID, "/p.jpg", picture(300+i, 300, color.RGBA{R: uint8(40 * i)}))
		p, err := r.thumb(t, alice.ID, "/p.jpg", 256)
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, len(p.Data))
		r.clock.Advance(time.Minute)
	}
	bound := int64(sizes[0] * 3)
	r.reopen(t, bound)
	if got := r.s.cache.size(); got > bound {
		t.Fatalf("after reopening under a %d-byte bound the folder holds %d", bound, got)
	}
	// The newest is kept.
	if _, err := r.thumb(t, alice.ID, "/p.jpg", 256); err != nil || r.counts()[1] != 1 {
		t.Fatalf("newest: %v, counts %v", err, r.counts())
	}
	for i := range 5 {
		r.put(t, alice.ID, "/q.jpg", picture(200+i, 200, color.RGBA{B: uint8(40 * i)}))
		if _, err := r.thumb(t, alice.ID, "/q.jpg", 256); err != nil {
			t.Fatal(err)
		}
		r.clock.Advance(time.Minute)
		if got := r.s.cache.size(); got > bound {
			t.Fatalf("the folder holds %d over its %d-byte bound", got, bound)
		}
	}
}

// A refusal is kept for the limits it was judged under: raised limits judge
// the image again.
func TestRefusalKeptPerLimits(t *testing.T) {
	r := newRig(t, 0)
	alice := r.env.AddUser(t, "alice", 0)
	r.put(t, alice.ID, "/big.jpg", picture(400, 300, color.RGBA{R: 10}))
	r.reopenWith(t, 0, thumb.Limits{MaxPixels: 100_000})
	for range 2 {
		if _, err := r.thumb(t, alice.ID, "/big.jpg", 64); !errs.Is(err, errs.Unsupported) {
			t.Fatalf("over a 0.1 MP limit: %v", err)
		}
	}
	r.reopen(t, 0)
	if _, err := r.thumb(t, alice.ID, "/big.jpg", 64); err != nil || r.counts() != [3]int64{1, 0, 0} {
		t.Fatalf("under the default limit: %v, counts %v", err, r.counts())
	}
}
