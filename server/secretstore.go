package server

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/fields"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/server/auth"
	"github.com/skiffhq/skiff/storage"
)

const resourceSecrets = "secrets"

// secretStore is auth.SecretStore over the object store: join tokens and
// node credentials are ordinary Secrets in skiff-system.
type secretStore struct {
	st  *storage.Store
	clk clock.Clock
}

var _ auth.SecretStore = secretStore{}

// storeErr translates storage's not-found and exists errors into the
// Status errors auth branches on, keeping the original in the message.
func storeErr(err error, name string) error {
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return api.NewNotFound(resourceSecrets, name)
	case errors.Is(err, storage.ErrExists):
		return api.NewAlreadyExists(resourceSecrets, name)
	}
	return err
}

// GetSecret implements auth.SecretStore.
func (s secretStore) GetSecret(ctx context.Context, namespace, name string) (*api.Secret, error) {
	obj, err := s.st.Get(ctx, resourceSecrets, namespace, name)
	if err != nil {
		return nil, storeErr(err, name)
	}
	sec, ok := obj.(*api.Secret)
	if !ok {
		return nil, fmt.Errorf("get secret %s/%s: store returned %T", namespace, name, obj)
	}
	return sec, nil
}

// CreateSecret implements auth.SecretStore. It stores a copy of in with
// the server-owned metadata a create through the API would get.
func (s secretStore) CreateSecret(ctx context.Context, in *api.Secret) error {
	b, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("create secret: copy: %w", err)
	}
	sec := &api.Secret{}
	if err := json.Unmarshal(b, sec); err != nil {
		return fmt.Errorf("create secret: copy: %w", err)
	}
	sec.UID = newUID()
	sec.CreationTimestamp = api.NewTime(s.clk.Now())
	sec.ResourceVersion = ""
	sec.Generation = 1
	api.SetTypeMeta(sec)
	api.SetDefaults(sec)
	return storeErr(s.st.Create(ctx, sec), in.Name)
}

// DeleteSecret implements auth.SecretStore.
func (s secretStore) DeleteSecret(ctx context.Context, namespace, name string) error {
	_, err := s.st.Delete(ctx, resourceSecrets, namespace, name, "")
	return storeErr(err, name)
}

// ListSecrets implements auth.SecretStore.
func (s secretStore) ListSecrets(ctx context.Context, namespace, secretType string) ([]*api.Secret, error) {
	opts := storage.ListOptions{Namespace: namespace}
	if secretType != "" {
		// The store matches the type on its stored fields, before it
		// unseals and decodes a row.
		sel, err := fields.SelectorFromSet(fields.Set{"type": secretType})
		if err != nil {
			return nil, fmt.Errorf("list secrets: %w", err)
		}
		opts.Fields = sel
	}
	objs, _, err := s.st.List(ctx, resourceSecrets, opts)
	if err != nil {
		return nil, err
	}
	out := make([]*api.Secret, 0, len(objs))
	for _, o := range objs {
		sec, ok := o.(*api.Secret)
		if !ok {
			return nil, fmt.Errorf("list secrets: store returned %T", o)
		}
		out = append(out, sec)
	}
	return out, nil
}

// newUID returns a random RFC 4122 version 4 UUID.
func newUID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
