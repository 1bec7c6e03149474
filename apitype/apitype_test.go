package apitype

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// The node's JSON is pinned: field names and the mtime's format (RFC 3339
// with nanoseconds, as time.Time encodes it) are the wire contract.
func TestNodeJSON(t *testing.T) {
	n := Node{Path: "/a/b.txt", Name: "b.txt", Size: 5, Mode: 0o644,
		MTime: Time{time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC)}, FileHash: "d41d8cd98f00b204e9800998ecf8427e", Type: TypeFile}
	b, err := json.Marshal(n)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"path":"/a/b.txt","name":"b.txt","isDir":false,"size":5,"mode":420,"mtime":"2026-01-02T03:04:05.0000006Z","fileHash":"d41d8cd98f00b204e9800998ecf8427e","type":"file"}`
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
	std, _ := json.Marshal(n.MTime.Time)
	if tb, _ := json.Marshal(n.MTime); string(tb) != string(std) {
		t.Fatalf("Time encodes %s, time.Time %s", tb, std)
	}
	var back Node
	if err := json.Unmarshal(b, &back); err != nil || back != n {
		t.Fatalf("round trip: %+v, %v", back, err)
	}
	// A link adds its target; its type says what it is.
	l := Node{Path: "/l", Name: "l", Size: 3, Mode: 0o777, MTime: n.MTime, Type: TypeSymlink, Target: "a/b"}
	if b, _ = json.Marshal(l); !strings.HasSuffix(string(b), `"fileHash":"","type":"symlink","target":"a/b"}`) || !l.IsSymlink() || n.IsSymlink() {
		t.Fatalf("a link's JSON: %s", b)
	}
}

// A year past 9999 (time.Time refuses to encode it) still makes an answer;
// a time that does not parse leaves the rest of the answer readable.
func TestTimeOutOfRange(t *testing.T) {
	far := Time{time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}
	if _, err := json.Marshal(far.Time); err == nil {
		t.Fatal("time.Time encodes year 10000 now: Time may be unnecessary")
	}
	b, err := json.Marshal(far)
	if err != nil || string(b) != `"10000-01-01T00:00:00Z"` {
		t.Fatalf("year 10000: %s, %v", b, err)
	}
	var n Node
	if err := json.Unmarshal([]byte(`{"name":"x","mtime":"10000-01-01T00:00:00Z","size":3}`), &n); err != nil || n.Size != 3 || !n.MTime.IsZero() {
		t.Fatalf("unparsable mtime: %+v, %v", n, err)
	}
}

// The async work body is pinned: agents of earlier builds read it.
func TestAsyncWorkJSON(t *testing.T) {
	w := AsyncWork{TaskID: "t", JobID: "j", Path: "/a/b", FileName: "b", FileHash: "h", Size: 3, Agent: "a",
		TargetDir: "d", Deadline: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	b, err := json.Marshal(w)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"taskId":"t","jobId":"j","path":"/a/b","fileName":"b","fileHash":"h","size":3,"agentId":"a","targetDir":"d","deadline":"2026-01-02T03:04:05Z"}`
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
	w.Container, w.Deadline = "c", time.Time{}
	if b, _ := json.Marshal(w); !strings.Contains(string(b), `"containerId":"c"`) || strings.Contains(string(b), "deadline") {
		t.Fatalf("container set, no deadline: %s", b)
	}
}
