package api_test

import (
	"encoding/json"
	"testing"

	"netdisk/internal/testutil"
)

// errorCode returns the code of an error body, failing when it has none.
func errorCode(t *testing.T, body string) string {
	t.Helper()
	var e struct {
		Error string  `json:"error"`
		Code  *string `json:"code"`
	}
	if err := json.Unmarshal([]byte(body), &e); err != nil || e.Error == "" || e.Code == nil {
		t.Fatalf("not an error body with a code: %q", body)
	}
	return *e.Code
}

// A one-request upload of unknown length (chunked) keeps the kind of the
// drive's refusal: over quota is 507 quota_exceeded, not bad input.
func TestSmallUploadChunkedOverQuota(t *testing.T) {
	withLedgers(t, func(t *testing.T, x *tester, _ *testutil.Redis) {
		x.addUser("olga", cs)
		st, body := x.raw("olga", "PUT", "/api/v1/file/upload?path=/big.bin", randBytes(3*cs), -1, nil)
		if st != 507 || errorCode(t, body) != "quota_exceeded" {
			t.Fatalf("chunked upload of 3 chunks under a 1-chunk quota: %d %s, want 507 quota_exceeded", st, body)
		}
	})
}

// With the Redis ledger down a chunked one-request upload is 503
// unavailable (retry later), not bad input.
func TestSmallUploadChunkedLedgerDown(t *testing.T) {
	r := testutil.StartRedis(t)
	x := start(t, "--redis", r.URL)
	x.addUser("uma", 100*cs)
	r.Kill()
	st, body := x.raw("uma", "PUT", "/api/v1/file/upload?path=/a.bin", randBytes(2*cs), -1, nil)
	if st != 503 || errorCode(t, body) != "unavailable" {
		t.Fatalf("chunked upload with Redis down: %d %s, want 503 unavailable", st, body)
	}
}
