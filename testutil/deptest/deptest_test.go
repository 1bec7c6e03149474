package deptest_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"netdisk/testutil/deptest"
)

// forbidden is what the client side must not link: the storage engines and
// every package of the server.
var forbidden = []string{
	"github.com/mattn/go-sqlite3",
	"github.com/jackc/pgx",
	"github.com/redis/go-redis",
	"github.com/minio",
	"netdisk/api",
	"netdisk/async",
	"netdisk/dav",
	"netdisk/davlock",
	"netdisk/dedup",
	"netdisk/drive",
	"netdisk/lock",
	"netdisk/meta",
	"netdisk/quota",
	"netdisk/server",
	"netdisk/upload",
	"netdisk/web",
}

// serverCommands are the files of cmd/netdisk that link the server by design.
var serverCommands = []string{"serve.go", "admin_migrate.go"}

func TestClientLinksNoServerCode(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	cli, err := deptest.FileImports(filepath.Join(root, "cmd", "netdisk"), serverCommands...)
	if err != nil {
		t.Fatal(err)
	}
	lib := []string{"netdisk/client", "netdisk/mount"}
	roots := slices.Clone(lib)
	for _, p := range cli {
		if !slices.Contains(lib, p) && (strings.Contains(strings.SplitN(p, "/", 2)[0], ".") || strings.HasPrefix(p, "netdisk/")) {
			roots = append(roots, p) // a module's package, not the standard library
		}
	}
	pkgs, err := deptest.Deps(root, roots...)
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) < len(roots) {
		t.Fatalf("go list named %d packages for %d roots", len(pkgs), len(roots))
	}
	for _, c := range deptest.Chains(pkgs, roots, forbidden) {
		if first, _, _ := strings.Cut(c, " "); !slices.Contains(lib, first) {
			c = "cmd/netdisk (a client command) -> " + c
		}
		t.Errorf("client side links server code: %s", c)
	}
}

// The chain finder names a forbidden package behind a clean one, and the
// first forbidden package only.
func TestChains(t *testing.T) {
	pkgs := map[string]deptest.Package{
		"r":       {ImportPath: "r", Imports: []string{"ok", "fmt"}},
		"ok":      {ImportPath: "ok", Imports: []string{"bad/sub"}},
		"bad/sub": {ImportPath: "bad/sub", Imports: []string{"worse"}},
	}
	got := deptest.Chains(pkgs, []string{"r"}, []string{"bad", "worse"})
	if len(got) != 1 || got[0] != "r -> ok -> bad/sub" {
		t.Fatalf("chains = %q", got)
	}
	if got := deptest.Chains(pkgs, []string{"ok"}, []string{"nothing"}); len(got) != 0 {
		t.Fatalf("chains = %q", got)
	}
}
