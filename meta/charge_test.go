package meta

import (
	"context"
	"testing"
	"time"
)

// A database from before the charge (migration 010) gets every user's
// charge computed from what they hold: entries by name, properties by bytes,
// the root free.
func TestMigrationChargesExistingEntries(t *testing.T) {
	ctx := context.Background()
	s, path := openTestFile(t)
	u, err := s.CreateUser(ctx, "ann", "h", false, 0)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1, 0)
	if _, err := s.Mkdir(ctx, u.ID, "/dossier-é", now); err != nil {
		t.Fatal(err)
	}
	n, err := s.CommitFile(ctx, u.ID, "/dossier-é/f", NewFile{Size: 3, ModTime: now, Chunks: []Chunk{{SHA256: "s", MD5: "m", Size: 3}}})
	if err != nil {
		t.Fatal(err)
	}
	p := Prop{Space: "urn:x", Local: "k", InnerXML: "vé"}
	if err := s.PatchProps(ctx, n.ID, []Prop{p}, nil); err != nil {
		t.Fatal(err)
	}
	root, _ := s.Stat(ctx, u.ID, "/")
	if err := s.PatchProps(ctx, root.ID, []Prop{p}, nil); err != nil {
		t.Fatal(err)
	}
	want := EntryCharge("dossier-é") + EntryCharge("f") + 2*p.Bytes()
	if got, _ := s.UserByID(ctx, u.ID); got.Meta != want {
		t.Fatalf("charged %d as it went, want %d", got.Meta, want)
	}
	// Back to the schema before the migration.
	for _, q := range []string{`ALTER TABLE users DROP COLUMN use_space_meta`, `DELETE FROM schema_migrations WHERE name LIKE '%012_meta_charge%'`} {
		if _, err := s.w.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	s, err = OpenSQLite(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got, _ := s.UserByID(ctx, u.ID); got.Meta != want || got.Finished != 3 {
		t.Fatalf("after the migration: charged %d, finished %d; want %d and 3", got.Meta, got.Finished, want)
	}
}
