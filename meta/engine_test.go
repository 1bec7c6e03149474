package meta_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// The contract hides its engine: no exported declaration of package meta
// names a type or value of database/sql (or its driver package), so a
// caller composes transactions through meta.Tx and never holds the
// database's own handle. The package's non-test files are read as source:
// exported functions' signatures, methods with exported names on exported
// types, exported types (an interface's methods, a struct's exported and
// embedded fields) and exported variables and constants.
func TestExportedDeclarationsHideDatabaseSQL(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var leaks []string
	decls := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		sqlNames := map[string]bool{}
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			if p != "database/sql" && !strings.HasPrefix(p, "database/sql/") {
				continue
			}
			local := p[strings.LastIndex(p, "/")+1:]
			if im.Name != nil {
				local = im.Name.Name
			}
			if local == "." {
				t.Errorf("%s imports %s with a dot: its names cannot be told apart", name, p)
			}
			sqlNames[local] = true
		}
		at := func(n ast.Node, what string, expr ast.Node) {
			decls++
			for _, ref := range sqlRefs(expr, sqlNames) {
				leaks = append(leaks, fmt.Sprintf("%s: %s refers to %s", fset.Position(n.Pos()), what, ref))
			}
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() {
					continue
				}
				what := d.Name.Name
				if d.Recv != nil {
					recv := receiverType(d.Recv.List[0].Type)
					if !ast.IsExported(recv) {
						continue
					}
					what = recv + "." + what
				}
				at(d, what, d.Type)
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if !s.Name.IsExported() {
							continue
						}
						if s.TypeParams != nil {
							at(s, s.Name.Name, s.TypeParams)
						}
						exposedMembers(s.Name.Name, s.Type, at)
					case *ast.ValueSpec:
						for i, n := range s.Names {
							if !n.IsExported() {
								continue
							}
							if s.Type != nil {
								at(n, n.Name, s.Type)
							}
							if i < len(s.Values) {
								at(n, n.Name, s.Values[i])
							}
						}
					}
				}
			}
		}
	}
	if decls < 50 {
		t.Fatalf("read %d exported declarations in %d files: not package meta's source?", decls, len(files))
	}
	sort.Strings(leaks)
	for _, l := range leaks {
		t.Error(l)
	}
}

// exposedMembers calls at for what a caller can reach of the exported type
// name defined as expr: a struct's exported and embedded fields, an
// interface's methods and embedded interfaces, or the whole type.
func exposedMembers(name string, expr ast.Expr, at func(ast.Node, string, ast.Node)) {
	switch e := expr.(type) {
	case *ast.StructType:
		for _, f := range e.Fields.List {
			if len(f.Names) == 0 {
				at(f, name+"."+receiverType(f.Type), f.Type)
				continue
			}
			for _, n := range f.Names {
				if n.IsExported() {
					exposedMembers(name+"."+n.Name, f.Type, at)
				}
			}
		}
	case *ast.InterfaceType:
		for _, m := range e.Methods.List {
			if len(m.Names) == 0 {
				at(m, name+" (embedded)", m.Type)
				continue
			}
			for _, n := range m.Names {
				at(m, name+"."+n.Name, m.Type)
			}
		}
	default:
		at(expr, name, expr)
	}
}

// sqlRefs lists the selectors on the database/sql imports (sqlNames) in n.
func sqlRefs(n ast.Node, sqlNames map[string]bool) []string {
	var refs []string
	ast.Inspect(n, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := sel.X.(*ast.Ident); ok && sqlNames[id.Name] {
				refs = append(refs, id.Name+"."+sel.Sel.Name)
			}
		}
		return true
	})
	return refs
}

// receiverType is the name of the type a receiver or embedded field names.
func receiverType(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.SelectorExpr:
			return x.Sel.Name
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}
