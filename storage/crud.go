package storage

import (
	"context"
	"errors"
	"fmt"

	"github.com/skiffhq/skiff/api"
)

// maxUpdateAttempts bounds GuaranteedUpdate's retries on conflict.
const maxUpdateAttempts = 16

// Create stores a new object. obj's resourceVersion is ignored; on success
// obj's apiVersion and kind are set and its resourceVersion is the new
// revision. It fails with ErrExists when
// the key is taken. The store assigns nothing else: UID, timestamps and
// defaults are the caller's. obj must not be used by other goroutines
// during the call.
//
// Writes from all goroutines are committed in groups: one transaction and
// one fsync per group, so an acknowledged write survives a crash or power
// loss. If ctx ends while the write is being committed, Create returns
// ctx's error yet the object may have been stored.
func (s *Store) Create(ctx context.Context, obj api.Object) error {
	e, err := s.encode(obj)
	if err != nil {
		return fmt.Errorf("create: %w", err)
	}
	o := &op{kind: opCreate, enc: e}
	if err := s.submit(ctx, o); err != nil {
		return fmt.Errorf("create %s: %w", e.key, err)
	}
	obj.GetObjectMeta().ResourceVersion = formatRevision(o.rev)
	return nil
}

// Update replaces an existing object. When obj's resourceVersion is set it
// must equal the stored one, else ErrConflict; empty updates
// unconditionally. ErrNotFound when absent. On success obj's
// resourceVersion is the new revision. Commit semantics are Create's.
func (s *Store) Update(ctx context.Context, obj api.Object) error {
	e, err := s.encode(obj)
	if err != nil {
		return fmt.Errorf("update: %w", err)
	}
	pre, err := parseRevision(obj.GetObjectMeta().ResourceVersion)
	if err != nil {
		return fmt.Errorf("update %s: %w", e.key, err)
	}
	o := &op{kind: opUpdate, enc: e, precond: pre}
	if err := s.submit(ctx, o); err != nil {
		return fmt.Errorf("update %s: %w", e.key, err)
	}
	obj.GetObjectMeta().ResourceVersion = formatRevision(o.rev)
	return nil
}

// GuaranteedUpdate reads an object, passes it to fn and writes what fn
// returns with the read revision as precondition, retrying from the
// current state on conflict (at most 16 attempts, then ErrConflict). fn
// owns cur and may modify and return it; an error from fn aborts and is
// returned as is. fn may run several times and must not have side effects
// beyond its return value. If the result encodes exactly like the stored
// object nothing is written and it is returned with the current
// resourceVersion.
//
// Concurrent GuaranteedUpdates of one object in this process take turns
// (waiting respects ctx), so they do not conflict with each other; only
// plain Updates and Deletes can make them retry.
func (s *Store) GuaranteedUpdate(ctx context.Context, resource, namespace, name string, fn func(cur api.Object) (api.Object, error)) (api.Object, error) {
	k := key{resource: resource, namespace: namespace, name: name}
	unlock, err := s.keyLocks.lock(ctx, k)
	if err != nil {
		return nil, fmt.Errorf("update %s: %w", k, err)
	}
	defer unlock()
	// value is only decoded and compared: the hot cache's own will do.
	value, rev, _, err := s.getValue(ctx, resource, namespace, name)
	if err != nil {
		return nil, fmt.Errorf("guaranteed update: %w", err)
	}
	info := s.resources[resource]
	for range maxUpdateAttempts {
		cur, err := decode(info, value)
		if err != nil {
			return nil, fmt.Errorf("update %s: %w", k, err)
		}
		next, err := fn(cur)
		if err != nil {
			return nil, err
		}
		if next == nil {
			return nil, fmt.Errorf("update %s: update function returned nil: %w", k, ErrInvalid)
		}
		next.GetObjectMeta().ResourceVersion = formatRevision(rev)
		e, err := s.encode(next)
		if err != nil {
			return nil, fmt.Errorf("update %s: %w", k, err)
		}
		if e.key != k {
			return nil, fmt.Errorf("update %s: update function changed the key to %s: %w", k, e.key, ErrInvalid)
		}
		if e.isStored(value, rev) {
			return next, nil
		}
		o := &op{kind: opUpdate, enc: e, precond: rev, current: true}
		err = s.submit(ctx, o)
		if err == nil {
			next.GetObjectMeta().ResourceVersion = formatRevision(o.rev)
			return next, nil
		}
		if !errors.Is(err, ErrConflict) || o.cur == nil {
			return nil, fmt.Errorf("update %s: %w", k, err)
		}
		value, rev = o.cur, o.curRev
	}
	return nil, fmt.Errorf("update %s: gave up after %d attempts: %w", k, maxUpdateAttempts, ErrConflict)
}

// Delete removes an object and returns its last state, stamped with the
// deletion's revision (the revision of the Deleted watch event). When
// preconditionRV is set it must equal the stored resourceVersion, else
// ErrConflict. ErrNotFound when absent. Commit semantics are Create's.
func (s *Store) Delete(ctx context.Context, resource, namespace, name, preconditionRV string) (api.Object, error) {
	info, err := s.lookup(resource)
	if err != nil {
		return nil, fmt.Errorf("delete: %w", err)
	}
	if err := checkKey(info, namespace, name); err != nil {
		return nil, fmt.Errorf("delete: %w", err)
	}
	k := key{resource: resource, namespace: namespace, name: name}
	pre, err := parseRevision(preconditionRV)
	if err != nil {
		return nil, fmt.Errorf("delete %s: %w", k, err)
	}
	o := &op{kind: opDelete, key: k, info: info, precond: pre}
	if err := s.submit(ctx, o); err != nil {
		return nil, fmt.Errorf("delete %s: %w", k, err)
	}
	obj, err := decode(info, o.value)
	if err != nil {
		return nil, fmt.Errorf("delete %s: %w", k, err)
	}
	return obj, nil
}
