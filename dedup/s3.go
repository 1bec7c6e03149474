package dedup

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strings"
	"syscall"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"netdisk/errs"
)

// S3Store keeps blobs as objects of an S3-compatible bucket (AWS, MinIO,
// Ceph RGW, versitygw), named PREFIX/<sha256>. Objects are immutable and
// content-addressed, so the properties the BlobStore contract asks for come
// from S3's own: a PUT is atomic (an object is absent or whole) and durable
// when acknowledged; two nodes putting the same chunk at once write the same
// bytes under the same name, and whichever lands last changes nothing.
type S3Store struct {
	c      *minio.Client
	bucket string
	prefix string // "" or ending in "/"
}

var _ BlobStore = (*S3Store)(nil)

// OpenS3 parses s3://BUCKET[/PREFIX]?endpoint=HOST:PORT&region=R[&insecure=1]
// and connects. Credentials come from AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY,
// else the shared credentials file's profile (AWS_PROFILE or ?profile=).
// Without an endpoint the store is AWS's (s3.amazonaws.com). The client
// does not read AWS_CA_BUNDLE; a private CA goes in the system's store.
func OpenS3(ctx context.Context, rawURL string) (*S3Store, error) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme != "s3" || u.Host == "" {
		return nil, fmt.Errorf("blob store %q: want s3://BUCKET[/PREFIX]?endpoint=…&region=…", rawURL)
	}
	q := u.Query()
	endpoint := q.Get("endpoint")
	if endpoint == "" {
		endpoint = "s3.amazonaws.com"
	}
	secure := q.Get("insecure") == ""
	if strings.HasPrefix(endpoint, "http://") {
		endpoint, secure = strings.TrimPrefix(endpoint, "http://"), false
	}
	endpoint = strings.TrimPrefix(endpoint, "https://")
	profile := q.Get("profile")
	creds := credentials.NewChainCredentials([]credentials.Provider{
		&credentials.EnvAWS{},
		&credentials.FileAWSCredentials{Profile: profile},
	})
	c, err := minio.New(endpoint, &minio.Options{Creds: creds, Secure: secure, Region: q.Get("region"),
		// Path-style requests: what MinIO, versitygw and RGW accept without
		// wildcard DNS for bucket names.
		BucketLookup: minio.BucketLookupPath})
	if err != nil {
		return nil, fmt.Errorf("blob store %s: %w", rawURL, err)
	}
	prefix := strings.Trim(u.Path, "/")
	if prefix != "" {
		prefix += "/"
	}
	s := &S3Store{c: c, bucket: u.Host, prefix: prefix}
	ok, err := c.BucketExists(ctx, s.bucket)
	if err != nil {
		return nil, fmt.Errorf("blob store %s: %w", rawURL, err)
	}
	if !ok {
		return nil, fmt.Errorf("blob store %s: bucket %q does not exist", rawURL, s.bucket)
	}
	return s, nil
}

func (s *S3Store) name(k Key) string { return s.prefix + string(k) }

// Put uploads b unless the object is there already (a HEAD is cheaper than
// re-sending a chunk another node or user stored). The store checks the key
// against the bytes: a wrong name would be served as someone else's content.
func (s *S3Store) Put(ctx context.Context, key Key, b []byte) error {
	if !key.Valid() {
		return fmt.Errorf("s3 put: invalid key %q", key)
	}
	if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != string(key) {
		return fmt.Errorf("s3 put %s: bytes do not match the key", key)
	}
	if ok, err := s.Has(ctx, key); err != nil || ok {
		return err
	}
	_, err := s.c.PutObject(ctx, s.bucket, s.name(key), bytes.NewReader(b), int64(len(b)),
		minio.PutObjectOptions{ContentType: "application/octet-stream", DisableMultipart: true, SendContentMd5: true})
	if err != nil {
		return s.err("put", key, err)
	}
	return nil
}

// Open returns a reader of the object; reads past a Seek are ranged GETs.
func (s *S3Store) Open(ctx context.Context, key Key) (io.ReadSeekCloser, error) {
	if !key.Valid() {
		return nil, fmt.Errorf("s3 open: invalid key %q: %w", key, ErrNotFound)
	}
	o, err := s.c.GetObject(ctx, s.bucket, s.name(key), minio.GetObjectOptions{})
	if err != nil {
		return nil, s.err("open", key, err)
	}
	// GetObject is lazy: Stat makes a missing object an error here, not at
	// the first Read.
	if _, err := o.Stat(); err != nil {
		o.Close()
		return nil, s.err("open", key, err)
	}
	return &s3Reader{o: o, s: s, key: key}, nil
}

// s3Reader gives the errors of reads after Open (each Seek starts another
// ranged GET, which may meet an outage) the same kinds as Open's.
type s3Reader struct {
	o   *minio.Object
	s   *S3Store
	key Key
}

func (r *s3Reader) Read(p []byte) (int, error) {
	n, err := r.o.Read(p)
	if err != nil && err != io.EOF {
		err = r.s.err("read", r.key, err)
	}
	return n, err
}

func (r *s3Reader) Seek(off int64, whence int) (int64, error) {
	n, err := r.o.Seek(off, whence)
	if err != nil {
		err = r.s.err("seek", r.key, err)
	}
	return n, err
}

func (r *s3Reader) Close() error { return r.o.Close() }

// Has is a HEAD of the object.
func (s *S3Store) Has(ctx context.Context, key Key) (bool, error) {
	if !key.Valid() {
		return false, nil
	}
	_, err := s.c.StatObject(ctx, s.bucket, s.name(key), minio.StatObjectOptions{})
	if err == nil {
		return true, nil
	}
	if err := s.err("stat", key, err); !errors.Is(err, ErrNotFound) {
		return false, err
	}
	return false, nil
}

// Delete removes the object; S3 answers a missing one with success.
func (s *S3Store) Delete(ctx context.Context, key Key) error {
	if !key.Valid() {
		return nil
	}
	if err := s.c.RemoveObject(ctx, s.bucket, s.name(key), minio.RemoveObjectOptions{}); err != nil {
		if err := s.err("delete", key, err); !errors.Is(err, ErrNotFound) {
			return err
		}
	}
	return nil
}

// Walk lists the objects under the prefix that are chunk names.
func (s *S3Store) Walk(ctx context.Context, fn func(Key) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // stops the listing when fn fails
	for o := range s.c.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: s.prefix, Recursive: true}) {
		if o.Err != nil {
			return s.err("list", "", o.Err)
		}
		k := Key(strings.TrimPrefix(o.Key, s.prefix))
		if !k.Valid() {
			continue // not ours: the bucket may hold other things beside the prefix
		}
		if err := fn(k); err != nil {
			return err
		}
	}
	return nil
}

// err gives every S3 failure its meaning, in this one place: a missing
// object is ErrNotFound; the store unreachable or not serving for a while
// (a refused, reset or timed-out connection, a 5xx or throttling answer) is
// errs.Unavailable, so the edges answer 503 and clients retry; anything else
// (a refused credential, a missing bucket: a misconfiguration) keeps no
// kind and is a 500. A cancelled caller stays a cancellation.
func (s *S3Store) err(op string, key Key, err error) error {
	resp := minio.ToErrorResponse(err)
	switch resp.Code {
	case "NoSuchKey", "NotFound":
		return fmt.Errorf("s3 %s %s: %w", op, key, ErrNotFound)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("s3 %s %s: %w", op, key, err)
	}
	if s3Unavailable(resp, err) {
		return errs.E("s3 "+op, errs.Unavailable, "", fmt.Errorf("blob store unreachable: %s %s: %w", op, key, err))
	}
	return fmt.Errorf("s3 %s %s: %w", op, key, err)
}

// s3Unavailable reports whether an S3 failure is the service being away
// rather than the request being wrong.
func s3Unavailable(resp minio.ErrorResponse, err error) bool {
	switch resp.Code {
	case "SlowDown", "ServiceUnavailable", "InternalError", "RequestTimeout", "RequestTimeTooSkewed",
		"XMinioServerNotInitialized":
		return true
	}
	if resp.StatusCode >= 500 || resp.StatusCode == 429 {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// OpenURL opens the blob store a --blobs URL names: s3://… is an S3Store
// behind a local read cache when cc.Dir is set.
func OpenURL(ctx context.Context, rawURL string, cc CacheConfig) (BlobStore, error) {
	if !strings.HasPrefix(rawURL, "s3://") {
		return nil, fmt.Errorf("blob store %q: want s3://BUCKET[/PREFIX]?endpoint=…&region=…", rawURL)
	}
	s, err := OpenS3(ctx, rawURL)
	if err != nil {
		return nil, err
	}
	if cc.Dir == "" {
		return s, nil
	}
	if err := os.MkdirAll(cc.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("cache dir: %w", err)
	}
	return NewCache(s, cc)
}
