package storage

// ChangeHook is told of every change a Store publishes, synchronously:
// this server's own writes before their writers are answered, other
// servers' (PostgreSQL) as the Store follows them, in revision order, on
// the publishing goroutine. Caches that must never serve a state older
// than a write already answered use it (the server's node credential
// cache and heartbeat node index). It must be quick and must not call
// the Store.
type ChangeHook interface {
	// Changed reports one change of resource's object namespace/name
	// ("" for cluster-scoped) at revision rev: its stored value after
	// the change, or for a deletion its last one. value must not be
	// modified or kept.
	Changed(resource, namespace, name string, deleted bool, value []byte, rev int64)
	// Missed reports that changes up to rev were not and will not be
	// reported (the store was replaced, or other servers' changes could
	// not be read back): whatever the hook derived must be rebuilt.
	Missed(rev int64)
}

// AddChangeHook registers h for every change published from now on.
func (s *Store) AddChangeHook(h ChangeHook) {
	s.pubMu.Lock()
	defer s.pubMu.Unlock()
	s.hooks = append(s.hooks, h)
}

// callHooks tells the hooks of cs. s.pubMu is held.
func (s *Store) callHooks(cs []*change) {
	for _, h := range s.hooks {
		for _, c := range cs {
			h.Changed(c.key.resource, c.key.namespace, c.key.name, c.typ == Deleted, c.value, c.rev)
		}
	}
}

// missedHooks tells the hooks that changes up to rev were skipped.
// s.pubMu is held.
func (s *Store) missedHooks(rev int64) {
	for _, h := range s.hooks {
		h.Missed(rev)
	}
}
