package objects

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/client"
	"github.com/skiffhq/skiff/internal/clock"
)

// ObjectClient is what the cache needs of the server: *client.Client.
type ObjectClient interface {
	Get(ctx context.Context, res api.ResourceInfo, ns, name string) (api.Object, error)
}

var _ ObjectClient = (*client.Client)(nil)

// DefaultTTL is how long a copy is served without asking the server.
const DefaultTTL = time.Minute

// Config configures a Cache.
type Config struct {
	// Client reads with the node's credential.
	Client ObjectClient
	// TTL: default DefaultTTL.
	TTL time.Duration
	// Clock measures the TTL. Default clock.Real.
	Clock clock.Clock
	// Logger. Default slog.Default().
	Logger *slog.Logger
}

// Cache implements the sync loop's ObjectGetter: GetSecret and
// GetConfigMap. A copy younger than the TTL is served from memory; an
// older one is refreshed from the server on use. When the server cannot
// be reached (or fails with 5xx/429) the last good copy is served, however
// old: the agent keeps its pods running without the server. When the
// server says the object is gone or no longer readable by the node (404,
// 403), the copy is dropped and the error returned. It is safe for
// concurrent use; callers get their own copies.
type Cache struct {
	cfg   Config
	clock clock.Clock
	log   *slog.Logger

	secrets, configMaps, claims, volumes api.ResourceInfo

	mu      sync.Mutex
	entries map[key]*entry
}

type key struct{ resource, ns, name string }

type entry struct {
	data    []byte // the object's JSON: copies are decoded from it
	fetched time.Time
}

// New returns a Cache for cfg.
func New(cfg Config) (*Cache, error) {
	if cfg.Client == nil {
		return nil, errors.New("object cache: a client is required")
	}
	if cfg.TTL < 0 {
		return nil, fmt.Errorf("object cache: negative TTL %v", cfg.TTL)
	}
	if cfg.TTL == 0 {
		cfg.TTL = DefaultTTL
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	s, ok1 := api.LookupResource("secrets")
	cm, ok2 := api.LookupResource("configmaps")
	if !ok1 || !ok2 {
		return nil, errors.New("object cache: secrets or configmaps not registered")
	}
	claims, ok := api.LookupResource("persistentvolumeclaims")
	pvs, ok2 := api.LookupResource("persistentvolumes")
	if !ok || !ok2 {
		return nil, errors.New("object cache: persistentvolumeclaims or persistentvolumes not registered")
	}
	return &Cache{cfg: cfg, clock: clock.Or(cfg.Clock), log: log.With("component", "objects"), secrets: s, configMaps: cm, claims: claims, volumes: pvs, entries: map[key]*entry{}}, nil
}

// GetSecret returns the secret ns/name (see Cache for freshness).
func (c *Cache) GetSecret(ctx context.Context, ns, name string) (*api.Secret, error) {
	out := &api.Secret{}
	if err := c.get(ctx, c.secrets, ns, name, out); err != nil {
		return nil, err
	}
	return out, nil
}

// GetConfigMap returns the configmap ns/name (see Cache for freshness).
func (c *Cache) GetConfigMap(ctx context.Context, ns, name string) (*api.ConfigMap, error) {
	out := &api.ConfigMap{}
	if err := c.get(ctx, c.configMaps, ns, name, out); err != nil {
		return nil, err
	}
	return out, nil
}

// GetPersistentVolumeClaim returns the claim ns/name. A claim not bound
// yet is not kept: the next call asks the server again.
func (c *Cache) GetPersistentVolumeClaim(ctx context.Context, ns, name string) (*api.PersistentVolumeClaim, error) {
	out := &api.PersistentVolumeClaim{}
	if err := c.get(ctx, c.claims, ns, name, out); err != nil {
		return nil, err
	}
	if out.Spec.VolumeName == "" {
		c.mu.Lock()
		delete(c.entries, key{c.claims.Resource, ns, name})
		c.mu.Unlock()
	}
	return out, nil
}

// GetPersistentVolume returns the volume name (cluster-scoped).
func (c *Cache) GetPersistentVolume(ctx context.Context, name string) (*api.PersistentVolume, error) {
	out := &api.PersistentVolume{}
	if err := c.get(ctx, c.volumes, "", name, out); err != nil {
		return nil, err
	}
	return out, nil
}

func (c *Cache) get(ctx context.Context, res api.ResourceInfo, ns, name string, into api.Object) error {
	k := key{res.Resource, ns, name}
	now := c.clock.Now()
	c.mu.Lock()
	e, ok := c.entries[k]
	c.mu.Unlock()
	if ok && now.Sub(e.fetched) < c.cfg.TTL {
		return decode(e.data, into)
	}
	obj, err := c.cfg.Client.Get(ctx, res, ns, name)
	if err == nil {
		data, merr := json.Marshal(obj)
		if merr != nil {
			return fmt.Errorf("cache %s %s/%s: %w", res.Kind, ns, name, merr)
		}
		c.mu.Lock()
		c.entries[k] = &entry{data: data, fetched: now}
		c.mu.Unlock()
		return decode(data, into)
	}
	if ok && serverAway(err) && ctx.Err() == nil {
		c.log.Warn("serving a cached copy: the server is unreachable", "kind", res.Kind, "object", ns+"/"+name,
			"age", now.Sub(e.fetched).String(), "err", err)
		return decode(e.data, into)
	}
	if !serverAway(err) {
		c.mu.Lock()
		delete(c.entries, k)
		c.mu.Unlock()
	}
	return fmt.Errorf("get %s %s/%s: %w", res.Kind, ns, name, err)
}

// serverAway reports whether err means the server could not answer (a
// transport error, 5xx, 429), as opposed to an answer about the object.
func serverAway(err error) bool {
	var se *api.StatusError
	if !errors.As(err, &se) {
		return true
	}
	return se.Status.Code == 429 || se.Status.Code >= 500
}

func decode(data []byte, into api.Object) error {
	if err := json.Unmarshal(data, into); err != nil {
		return fmt.Errorf("decode cached object: %w", err)
	}
	return nil
}
