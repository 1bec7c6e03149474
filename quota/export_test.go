package quota

// Visited is how many tasks the ledger's scans have looked at so far.
func (m *Memory) Visited() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.visited
}
