// Package deptest keeps the client side of netdisk free of server code: its
// test lists the dependencies of the Go client, the mount and the packages
// the CLI's client commands import, and fails naming the import chain that
// brings back a storage engine (go-sqlite3 with its cgo, pgx, go-redis,
// minio) or a server package. A user's machine runs the client and the
// mount; what they link is what they ship, build (cgo) and trust.
//
// The CLI is one binary and its serve and admin migrate commands link the
// server by design, so the check starts from the packages its other commands
// import (read from their source files) rather than from cmd/netdisk.
//
// Its test also holds that package meta alone talks to the database: no
// other package's non-test files import database/sql.
//
// It also keeps the module layered: a table places every package on a layer
// (leaves, stores, the drive, the protocols, the HTTP surface, the server; the
// client side apart), and the test fails naming each import that goes up or
// across, and each package the table does not place. Test rigs sit on the
// layer of what they build, and only tests and benchmarks link them.
package deptest

import (
	"encoding/json"
	"fmt"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Package is a node of the import graph, as go list -json prints it.
type Package struct {
	ImportPath string
	Imports    []string
	// TestImports are the imports of the package's own test files (package
	// p, not p_test): they are compiled into p, so they keep to p's layer.
	TestImports []string
}

// Deps lists roots and every package they depend on, run in the module
// directory dir.
func Deps(dir string, roots ...string) (map[string]Package, error) {
	list, err := goList(dir, append([]string{"-deps", "-json=ImportPath,Imports"}, roots...)...)
	if err != nil {
		return nil, err
	}
	pkgs := map[string]Package{}
	for _, p := range list {
		pkgs[p.ImportPath] = p
	}
	return pkgs, nil
}

// Packages lists the packages patterns match, with their imports and their
// internal tests' imports, run in the module directory dir.
func Packages(dir string, patterns ...string) ([]Package, error) {
	return goList(dir, append([]string{"-json=ImportPath,Imports,TestImports"}, patterns...)...)
}

func goList(dir string, args ...string) ([]Package, error) {
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goBin); err != nil {
		if goBin, err = exec.LookPath("go"); err != nil {
			return nil, err
		}
	}
	cmd := exec.Command(goBin, append([]string{"list"}, args...)...)
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list %s: %w", strings.Join(args, " "), err)
	}
	var pkgs []Package
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p Package
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			return nil, fmt.Errorf("go list output: %w", err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs, nil
}

// Bad reports whether path is one of the forbidden packages or below one
// ("netdisk/meta" covers "netdisk/meta/metatest").
func Bad(path string, forbidden []string) bool {
	for _, f := range forbidden {
		if path == f || strings.HasPrefix(path, f+"/") {
			return true
		}
	}
	return false
}

// Chains returns, for every forbidden package reachable from a root, one
// shortest import chain to it: "root -> … -> forbidden", sorted.
func Chains(pkgs map[string]Package, roots, forbidden []string) []string {
	var chains []string
	seen := map[string]bool{}
	for _, root := range roots {
		prev := map[string]string{root: ""}
		queue := []string{root}
		for len(queue) > 0 {
			p := queue[0]
			queue = queue[1:]
			if Bad(p, forbidden) {
				if !seen[p] {
					seen[p] = true
					chain := []string{p}
					for q := prev[p]; q != ""; q = prev[q] {
						chain = append(chain, q)
					}
					slices.Reverse(chain)
					chains = append(chains, strings.Join(chain, " -> "))
				}
				continue // the first forbidden package on a path says enough
			}
			for _, imp := range pkgs[p].Imports {
				if _, ok := prev[imp]; !ok {
					prev[imp] = p
					queue = append(queue, imp)
				}
			}
		}
	}
	sort.Strings(chains)
	return chains
}

// FileImports lists the packages the non-test Go files of dir import, but
// for the files skip names.
func FileImports(dir string, skip ...string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	set := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || slices.Contains(skip, filepath.Base(f)) {
			continue
		}
		af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			return nil, err
		}
		for _, im := range af.Imports {
			p, err := strconv.Unquote(im.Path.Value)
			if err != nil {
				return nil, err
			}
			set[p] = true
		}
	}
	out := make([]string, 0, len(set))
	for p := range set {
		out = append(out, p)
	}
	sort.Strings(out)
	return out, nil
}
