package client

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"netdisk/apitype"
	"netdisk/internal/atomicfile"
)

// outcome is a delivery's report the daemon has not taken yet, and until
// when it is worth sending (the job's deadline: later the daemon records
// nothing).
type outcome struct {
	Report apitype.AsyncReport `json:"report"`
	Until  time.Time           `json:"until"`
}

// outcomeJournal keeps an agent's outcomes on disk, one file per task,
// written atomically (temp file, fsync, rename, directory fsync): after a
// crash a file is whole or absent, and an outcome written is never lost
// before the daemon has it.
type outcomeJournal struct{ dir string }

func openOutcomeJournal(dir string) (*outcomeJournal, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("agent state: %w", err)
	}
	return &outcomeJournal{dir: dir}, nil
}

// name is the task's file: task IDs hold paths, so they are hashed.
func (j *outcomeJournal) name(taskID string) string {
	h := sha256.Sum256([]byte(taskID))
	return filepath.Join(j.dir, hex.EncodeToString(h[:16])+".json")
}

func (j *outcomeJournal) put(o outcome) error {
	b, err := json.Marshal(o)
	if err != nil {
		return err
	}
	return atomicfile.Write(j.name(o.Report.TaskID), 0o600, func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	})
}

func (j *outcomeJournal) drop(taskID string) error {
	if err := os.Remove(j.name(taskID)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// load returns the kept outcomes; unreadable files (a foreign file, a temp
// file of a crashed write) are left alone.
func (j *outcomeJournal) load() ([]outcome, error) {
	ents, err := os.ReadDir(j.dir)
	if err != nil {
		return nil, fmt.Errorf("agent state: %w", err)
	}
	var out []outcome
	for _, e := range ents {
		if e.IsDir() || strings.HasPrefix(e.Name(), ".") || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(j.dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("agent state: %w", err)
		}
		var o outcome
		if json.Unmarshal(b, &o) != nil || o.Report.TaskID == "" {
			continue
		}
		out = append(out, o)
	}
	return out, nil
}

// countingWriter tells add the running total written through it.
type countingWriter struct {
	w   io.Writer
	n   int64
	add func(total int64)
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	c.add(c.n)
	return n, err
}
