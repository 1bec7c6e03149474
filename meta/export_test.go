package meta

// SetSearchTuning sets how many candidates of the index s's searches sort
// (more: they walk the time order first) and how many nodes that walk reads
// before it turns to the index (search.go: probeCap, scanBudget).
func SetSearchTuning(s *SQLStore, probe, scan int) { s.searchProbe, s.searchScan = probe, scan }
