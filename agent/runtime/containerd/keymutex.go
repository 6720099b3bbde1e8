package containerd

import "sync"

// keyMutex is a set of mutexes by key, each alive only while held or
// waited for, so a long-running agent keeps none for containers long gone.
type keyMutex struct {
	mu    sync.Mutex
	locks map[string]*keyLock
}

type keyLock struct {
	sync.Mutex
	refs int // holders and waiters
}

// lock takes key's mutex and returns its unlock.
func (m *keyMutex) lock(key string) (unlock func()) {
	m.mu.Lock()
	if m.locks == nil {
		m.locks = make(map[string]*keyLock)
	}
	l := m.locks[key]
	if l == nil {
		l = &keyLock{}
		m.locks[key] = l
	}
	l.refs++
	m.mu.Unlock()
	l.Lock()
	return func() {
		l.Unlock()
		m.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(m.locks, key)
		}
		m.mu.Unlock()
	}
}

// held is how many keys are held or waited for.
func (m *keyMutex) held() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.locks)
}
