package storage

import (
	"context"
	"sync"
)

// keyLocks hands out one lock per object key, created on demand and
// forgotten when unused. The zero value is ready to use.
type keyLocks struct {
	mu sync.Mutex
	m  map[key]*keyLock
}

type keyLock struct {
	sem  chan struct{} // capacity 1: holding the lock = a token inside
	refs int           // holders and waiters; guarded by keyLocks.mu
}

// lock waits until it holds k's lock or ctx ends; unlock releases it.
func (l *keyLocks) lock(ctx context.Context, k key) (unlock func(), err error) {
	l.mu.Lock()
	if l.m == nil {
		l.m = make(map[key]*keyLock)
	}
	kl := l.m[k]
	if kl == nil {
		kl = &keyLock{sem: make(chan struct{}, 1)}
		l.m[k] = kl
	}
	kl.refs++
	l.mu.Unlock()

	release := func() {
		l.mu.Lock()
		if kl.refs--; kl.refs == 0 {
			delete(l.m, k)
		}
		l.mu.Unlock()
	}
	select {
	case kl.sem <- struct{}{}:
		return func() { <-kl.sem; release() }, nil
	case <-ctx.Done():
		release()
		return nil, ctx.Err()
	}
}
