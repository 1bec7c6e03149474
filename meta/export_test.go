package meta

// SetSearchScan sets how many nodes s's searches read in time order before
// turning to the index; 0 goes to the index at once.
func SetSearchScan(s *SQLStore, n int) { s.searchScan = n }
