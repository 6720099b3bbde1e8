package authtest

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/server/auth"
)

// MemSecretStore is an in-memory auth.SecretStore. Its zero value is an
// empty store ready to use; it is safe for concurrent use and copies
// Secrets in and out. SetErr makes every call fail (to test store
// failures); Gets counts GetSecret calls (to test caching).
type MemSecretStore struct {
	mu      sync.Mutex
	secrets map[string]*api.Secret // namespace/name → secret
	gets    int
	err     error
}

var _ auth.SecretStore = (*MemSecretStore)(nil)

// SetErr makes every later call fail with err (nil to stop).
func (m *MemSecretStore) SetErr(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.err = err
}

// Gets returns how many times GetSecret was called.
func (m *MemSecretStore) Gets() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.gets
}

// Names returns the namespace/name of every stored secret, sorted.
func (m *MemSecretStore) Names() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Sorted(maps.Keys(m.secrets))
}

// Put stores a copy of s unconditionally, as an admin writing through the
// API would.
func (m *MemSecretStore) Put(s *api.Secret) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.putLocked(s)
}

// GetSecret implements auth.SecretStore.
func (m *MemSecretStore) GetSecret(_ context.Context, namespace, name string) (*api.Secret, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gets++
	if m.err != nil {
		return nil, m.err
	}
	s, ok := m.secrets[namespace+"/"+name]
	if !ok {
		return nil, api.NewNotFound("secrets", name)
	}
	return clone(s), nil
}

// CreateSecret implements auth.SecretStore.
func (m *MemSecretStore) CreateSecret(_ context.Context, s *api.Secret) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return m.err
	}
	if _, ok := m.secrets[s.Namespace+"/"+s.Name]; ok {
		return api.NewAlreadyExists("secrets", s.Name)
	}
	m.putLocked(s)
	return nil
}

// DeleteSecret implements auth.SecretStore.
func (m *MemSecretStore) DeleteSecret(_ context.Context, namespace, name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return m.err
	}
	key := namespace + "/" + name
	if _, ok := m.secrets[key]; !ok {
		return api.NewNotFound("secrets", name)
	}
	delete(m.secrets, key)
	return nil
}

// ListSecrets implements auth.SecretStore.
func (m *MemSecretStore) ListSecrets(_ context.Context, namespace, secretType string) ([]*api.Secret, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return nil, m.err
	}
	var out []*api.Secret
	for _, k := range slices.Sorted(maps.Keys(m.secrets)) {
		if strings.HasPrefix(k, namespace+"/") && (secretType == "" || m.secrets[k].Type == secretType) {
			out = append(out, clone(m.secrets[k]))
		}
	}
	return out, nil
}

func (m *MemSecretStore) putLocked(s *api.Secret) {
	if m.secrets == nil {
		m.secrets = make(map[string]*api.Secret)
	}
	m.secrets[s.Namespace+"/"+s.Name] = clone(s)
}

func clone(s *api.Secret) *api.Secret {
	c := *s
	c.Labels = maps.Clone(s.Labels)
	c.Annotations = maps.Clone(s.Annotations)
	c.Data = make(map[string][]byte, len(s.Data))
	for k, v := range s.Data {
		c.Data[k] = slices.Clone(v)
	}
	return &c
}
