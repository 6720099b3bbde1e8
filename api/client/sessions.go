package client

import (
	"crypto/tls"
	"sync"
)

// sessionCache is a tls.ClientSessionCache that keeps a server's session
// through one failed handshake.
//
// crypto/tls drops the session of any resumed handshake that fails (RFC
// 5077's advice, against a corrupted ticket), and a timeout is a failure.
// A fleet reconnecting to a restarted, busy server timed out once and lost
// its tickets, so its next attempts were full handshakes, which cost the
// server (a signature) and the agent (the chain's verification) more, when
// the server was already short of a core: at 10,000 agents, 5,700 of
// 10,000 came back without resuming. Here the first failure in a row
// leaves the session; a second drops it. A server that cannot use a
// ticket falls back to a full handshake rather than failing, so a ticket
// that fails twice in a row is one to forget.
type sessionCache struct {
	inner tls.ClientSessionCache

	mu     sync.Mutex
	failed map[string]bool // the session under this key failed once since it worked
}

func newSessionCache(size int) *sessionCache {
	return &sessionCache{inner: tls.NewLRUClientSessionCache(size), failed: map[string]bool{}}
}

func (c *sessionCache) Get(key string) (*tls.ClientSessionState, bool) { return c.inner.Get(key) }

// Put stores cs; a nil cs (crypto/tls after a failed handshake) is
// ignored the first time in a row.
func (c *sessionCache) Put(key string, cs *tls.ClientSessionState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cs != nil {
		delete(c.failed, key)
		c.inner.Put(key, cs)
		return
	}
	if !c.failed[key] {
		c.failed[key] = true
		return
	}
	delete(c.failed, key)
	c.inner.Put(key, nil)
}
