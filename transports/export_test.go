package transports

// CheckHost is parseHost's verdict alone, for the tests and benchmarks that
// judge a host without wanting its address.
func CheckHost(host string) error {
	_, err := parseHost(host)
	return err
}

// len reports how many transports the pool holds.
func (p *pool) len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.entries)
}

// Len reports how many names a holds (kept answers and dropped ones).
func (a *Answers) Len() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.byName)
}
