package deptest

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Layer is one rung of the module. Its packages may import each other and
// the packages of the layers named in May, and nothing else of the module.
type Layer struct {
	Name string
	// May names the layers, all listed before this one, whose packages
	// this layer's packages may import.
	May []string
	// Pkgs are import paths below the module ("errs", "meta/metatest");
	// "bench/..." is a folder and every package below it.
	Pkgs []string
	// Rigs are the packages of Pkgs that are test rigs: a production
	// package imports none (its tests may).
	Rigs []string
	// LinksRigs says this layer's programs link test rigs (benchmarks
	// start real daemons and servers with them).
	LinksRigs bool
}

// CheckLayers returns what breaks the layering of module's packages pkgs,
// sorted: an import (of a package or of its internal tests) of a layer its
// layer may not import, a production package that imports a test rig, a
// package on no layer or on two, a table entry that names no package, and
// a layer allowed to import one listed after it.
func CheckLayers(module string, layers []Layer, pkgs []Package) []string {
	var bad []string
	index := map[string]int{}
	for i, l := range layers {
		for _, m := range l.May {
			if j, ok := index[m]; !ok || j >= i {
				bad = append(bad, fmt.Sprintf("table: layer %s may import %s, which is not a layer listed before it", l.Name, m))
			}
		}
		index[l.Name] = i
	}
	type place struct {
		layer int
		rig   bool
	}
	places := map[string]place{}
	used := map[string]bool{} // table entries that matched a package
	for _, p := range pkgs {
		rel, ok := strings.CutPrefix(p.ImportPath, module+"/")
		if !ok {
			continue
		}
		var on []string
		for i, l := range layers {
			for _, e := range l.Pkgs {
				if match(e, rel) {
					used[e] = true
					on = append(on, l.Name)
					places[p.ImportPath] = place{i, slices.Contains(l.Rigs, rel)}
				}
			}
		}
		switch len(on) {
		case 0:
			bad = append(bad, fmt.Sprintf("%s is on no layer: place it in the table", p.ImportPath))
		case 1:
		default:
			bad = append(bad, fmt.Sprintf("%s is on %d layers: %s", p.ImportPath, len(on), strings.Join(on, ", ")))
		}
	}
	for _, l := range layers {
		for _, e := range l.Pkgs {
			if !used[e] {
				bad = append(bad, fmt.Sprintf("table: layer %s names %s, which is no package", l.Name, e))
			}
		}
		for _, r := range l.Rigs {
			if !slices.Contains(l.Pkgs, r) {
				bad = append(bad, fmt.Sprintf("table: layer %s names rig %s, which is not among its packages", l.Name, r))
			}
		}
	}
	for _, p := range pkgs {
		from, ok := places[p.ImportPath]
		if !ok {
			continue
		}
		l := layers[from.layer]
		may := "only its own layer"
		if len(l.May) > 0 {
			may += " and " + strings.Join(l.May, ", ")
		}
		check := func(imports []string, who string) {
			for _, imp := range imports {
				to, ok := places[imp]
				if !ok {
					continue // outside the module, or reported as placed nowhere
				}
				if to.layer != from.layer && !slices.Contains(l.May, layers[to.layer].Name) {
					bad = append(bad, fmt.Sprintf("%s (layer %s) import %s (layer %s); layer %s may import %s",
						who, l.Name, imp, layers[to.layer].Name, l.Name, may))
				}
			}
		}
		check(p.Imports, p.ImportPath+"'s files")
		check(p.TestImports, p.ImportPath+"'s tests")
		if from.rig || l.LinksRigs {
			continue
		}
		for _, imp := range p.Imports {
			if to, ok := places[imp]; ok && to.rig {
				bad = append(bad, fmt.Sprintf("%s (layer %s) imports the test rig %s: production code links no rig", p.ImportPath, l.Name, imp))
			}
		}
	}
	sort.Strings(bad)
	return bad
}

// match reports whether the table entry e names the package rel.
func match(e, rel string) bool {
	if dir, ok := strings.CutSuffix(e, "/..."); ok {
		return rel == dir || strings.HasPrefix(rel, dir+"/")
	}
	return e == rel
}
