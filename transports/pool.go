package transports

import (
	"net/http"
	"sync"
)

// poolSize bounds how many *http.Transport (each with its own idle
// connections) one Public or LAN keeps. The least recently used one is
// dropped, and its idle connections closed, when a new key needs room.
const poolSize = 64

// pool holds one *http.Transport per key. Connections are pooled INSIDE a
// transport, and net/http hands a connection dialed for one request to any
// other request with the same scheme and host:port. So every property a
// connection was checked for must be part of the key: for Public, the host
// and the exact set of checked addresses (a connection dialed for one
// Resolved can then never serve a request whose Resolved excludes its
// address); for LAN, the device address and the pin (a connection verified
// against one pin never serves a request carrying another). The zero pool is
// ready to use; it is safe for concurrent use.
type pool struct {
	mu      sync.Mutex
	entries map[string]*poolEntry
	clock   uint64
}

type poolEntry struct {
	rt   *http.Transport
	used uint64
}

// get returns the transport for key, building it with mk on first use.
func (p *pool) get(key string, mk func() *http.Transport) *http.Transport {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clock++
	if e, ok := p.entries[key]; ok {
		e.used = p.clock
		return e.rt
	}
	if p.entries == nil {
		p.entries = make(map[string]*poolEntry)
	}
	if len(p.entries) >= poolSize {
		var oldest string
		var at uint64
		for k, e := range p.entries {
			if oldest == "" || e.used < at {
				oldest, at = k, e.used
			}
		}
		p.entries[oldest].rt.CloseIdleConnections()
		delete(p.entries, oldest)
	}
	rt := mk()
	p.entries[key] = &poolEntry{rt: rt, used: p.clock}
	return rt
}

// closeIdle closes every idle connection of every transport.
func (p *pool) closeIdle() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, e := range p.entries {
		e.rt.CloseIdleConnections()
	}
}
