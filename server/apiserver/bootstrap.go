package apiserver

import (
	"context"
	"errors"
	"fmt"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/storage"
)

// SystemNamespaces exist in every cluster: default for users, kube-system
// for manifests written for Kubernetes, skiff-system for skiff's own
// objects (join tokens, node credentials).
func SystemNamespaces() []string { return []string{"default", "kube-system", "skiff-system"} }

// Bootstrap creates the system namespaces that do not exist yet, loads the
// Services' cluster IPs and node ports into the allocator and makes sure
// the `kubernetes` Service exists. It is idempotent and must run once at
// every start, before the server takes requests.
func (s *Server) Bootstrap(ctx context.Context) error {
	for _, name := range SystemNamespaces() {
		ns := &api.Namespace{ObjectMeta: api.ObjectMeta{Name: name}}
		prepareForCreate(ns, s.clock.Now())
		api.SetDefaults(ns)
		if err := s.store.Create(ctx, ns); err != nil && !errors.Is(err, storage.ErrExists) {
			return fmt.Errorf("create namespace %s: %w", name, err)
		}
	}
	if err := s.loadServices(ctx); err != nil {
		return err
	}
	if err := s.ensureKubernetesService(ctx); err != nil {
		return err
	}
	return s.bootstrapStorageClass(ctx)
}

// bootstrapStorageClass creates the default StorageClass, local-path,
// served by the built-in provisioner, unless it exists (an admin may
// have changed or deleted it since: a later start does not recreate a
// deleted one only when another default exists).
func (s *Server) bootstrapStorageClass(ctx context.Context) error {
	wffc, del := api.VolumeBindingWaitForFirstConsumer, api.ReclaimDelete
	sc := &api.StorageClass{
		ObjectMeta:        api.ObjectMeta{Name: api.LocalPathStorageClass, Annotations: map[string]string{api.AnnotationDefaultStorageClass: "true"}},
		Provisioner:       api.LocalPathProvisioner,
		ReclaimPolicy:     &del,
		VolumeBindingMode: &wffc,
	}
	objs, _, err := s.store.List(ctx, "storageclasses", storage.ListOptions{})
	if err != nil {
		return fmt.Errorf("list storage classes: %w", err)
	}
	for _, o := range objs {
		if o.GetObjectMeta().Name == sc.Name || o.GetObjectMeta().Annotations[api.AnnotationDefaultStorageClass] == "true" {
			return nil
		}
	}
	prepareForCreate(sc, s.clock.Now())
	api.SetDefaults(sc)
	if err := s.store.Create(ctx, sc); err != nil && !errors.Is(err, storage.ErrExists) {
		return fmt.Errorf("create storage class %s: %w", sc.Name, err)
	}
	return nil
}
