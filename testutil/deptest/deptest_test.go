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
	"netdisk/daemon",
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

// layers places every package of the module, lowest first. A package
// imports its own layer and the layers in its May; the client side stands
// beside the server's layers and shares only the leaves. Test rigs sit on
// the layer of what they build.
var layers = []deptest.Layer{
	{Name: "leaf",
		Pkgs: []string{"errs", "vpath", "apitype", "chunker",
			"internal/atomicfile", "internal/cachefile", "internal/crashpoint", "internal/pprofserve",
			"internal/bytesize", "internal/rediserr", "internal/redishealth", "internal/tick", "internal/tlsbulk", "internal/tlsconf", "internal/zero", "thumb",
			"testutil", "testutil/deptest", "web/browsertest"},
		Rigs: []string{"testutil", "testutil/deptest", "web/browsertest"}},
	{Name: "store", May: []string{"leaf"},
		Pkgs: []string{"meta", "dedup", "quota", "lock", "davlock", "async",
			"meta/metatest", "dedup/storetest", "lock/locktest", "async/storetest"},
		Rigs: []string{"meta/metatest", "dedup/storetest", "lock/locktest", "async/storetest"}},
	{Name: "drive", May: []string{"leaf", "store"},
		Pkgs: []string{"drive", "drive/drivetest"},
		Rigs: []string{"drive/drivetest"}},
	{Name: "protocol", May: []string{"leaf", "store", "drive"},
		Pkgs: []string{"upload", "dav", "preview"}},
	{Name: "surface", May: []string{"leaf", "store", "drive", "protocol"},
		Pkgs: []string{"api", "web"}},
	{Name: "server", May: []string{"leaf", "store", "drive", "protocol", "surface"},
		Pkgs: []string{"server"}},
	{Name: "daemon", May: []string{"leaf", "store", "drive", "protocol", "surface", "server"},
		Pkgs: []string{"daemon"}},
	{Name: "client", May: []string{"leaf"},
		Pkgs: []string{"client", "mount"}},
	{Name: "cli", May: []string{"leaf", "store", "drive", "protocol", "surface", "server", "daemon", "client"},
		Pkgs: []string{"cmd/netdisk"}},
	{Name: "e2e", May: []string{"leaf", "client"},
		Pkgs: []string{"e2e"}},
	{Name: "bench", May: []string{"leaf", "store", "drive", "protocol", "surface", "server", "daemon", "client"},
		Pkgs: []string{"bench/..."}, LinksRigs: true},
}

// No package imports from a layer above it or across to the other side,
// production code links no test rig, and every package is placed. A
// package's external tests (package p_test) are outside the check: they
// may build on anything, as e2e does.
func TestLayers(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	pkgs, err := deptest.Packages(root, "./...")
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) < 40 {
		t.Fatalf("go list ./... named %d packages", len(pkgs))
	}
	for _, b := range deptest.CheckLayers("netdisk", layers, pkgs) {
		t.Error(b)
	}
}

// The layer check names an upward import, a test's upward import, a
// production import of a rig and an unplaced package; it passes what keeps
// to the table.
func TestCheckLayers(t *testing.T) {
	table := []deptest.Layer{
		{Name: "low", Pkgs: []string{"a", "a/atest"}, Rigs: []string{"a/atest"}},
		{Name: "high", May: []string{"low"}, Pkgs: []string{"b", "tools/..."}},
	}
	ok := []deptest.Package{
		{ImportPath: "m/a", Imports: []string{"fmt"}},
		{ImportPath: "m/a/atest", Imports: []string{"m/a"}},
		{ImportPath: "m/b", Imports: []string{"m/a", "fmt"}, TestImports: []string{"m/a/atest"}},
		{ImportPath: "m/tools/x", Imports: []string{"m/b"}},
	}
	if got := deptest.CheckLayers("m", table, ok); len(got) != 0 {
		t.Fatalf("a layered graph reported: %q", got)
	}
	for _, tc := range []struct {
		name string
		pkgs []deptest.Package
		want string
	}{
		{"upward", []deptest.Package{{ImportPath: "m/a", Imports: []string{"m/b"}}, {ImportPath: "m/b"}, {ImportPath: "m/tools/x"}, {ImportPath: "m/a/atest"}},
			"m/a's files (layer low) import m/b (layer high)"},
		{"upward in a test", []deptest.Package{{ImportPath: "m/a", TestImports: []string{"m/tools/x"}}, {ImportPath: "m/b"}, {ImportPath: "m/tools/x"}, {ImportPath: "m/a/atest"}},
			"m/a's tests (layer low) import m/tools/x (layer high)"},
		{"rig in production", []deptest.Package{{ImportPath: "m/b", Imports: []string{"m/a/atest"}}, {ImportPath: "m/a"}, {ImportPath: "m/tools/x"}, {ImportPath: "m/a/atest"}},
			"m/b (layer high) imports the test rig m/a/atest"},
		{"unplaced", append(slices.Clone(ok), deptest.Package{ImportPath: "m/c"}),
			"m/c is on no layer"},
		{"gone", ok[1:],
			"table: layer low names a, which is no package"},
	} {
		got := deptest.CheckLayers("m", table, tc.pkgs)
		if len(got) != 1 || !strings.HasPrefix(got[0], tc.want) {
			t.Errorf("%s: got %q, want one line starting %q", tc.name, got, tc.want)
		}
	}
	badTable := []deptest.Layer{{Name: "x", May: []string{"y"}, Pkgs: []string{"a"}}, {Name: "y", Pkgs: []string{"b"}}}
	if got := deptest.CheckLayers("m", badTable, []deptest.Package{{ImportPath: "m/a"}, {ImportPath: "m/b"}}); len(got) != 1 || !strings.Contains(got[0], "not a layer listed before it") {
		t.Errorf("a layer allowed to import a later one: %q", got)
	}
}
