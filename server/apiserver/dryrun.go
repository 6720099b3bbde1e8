package apiserver

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/storage"
)

// This file holds dryRun=All: a write that is decoded, defaulted,
// validated and checked against the stored object exactly as a real one,
// and answered with the object it would have stored, but never written.
// kubectl diff and --dry-run=server rely on it.

// dryRunAll is the one dryRun value Kubernetes defines.
const dryRunAll = "All"

// checkDryRun refuses dryRun values other than "All" (as Kubernetes does).
func checkDryRun(values []string) *api.StatusError {
	for _, v := range values {
		if v != dryRunAll {
			return api.NewBadRequest("dryRun: unsupported value %q; the only supported value is %q", v, dryRunAll)
		}
	}
	return nil
}

// isDryRun reports whether r asks for a dry run in its query.
func isDryRun(r *http.Request) bool {
	return len(r.URL.Query()["dryRun"]) > 0
}

// dryRunCreate checks what a real create would check after validation:
// the name is free. obj is already prepared, defaulted and valid.
func (s *Server) dryRunCreate(r *http.Request, rt route, obj api.Object) error {
	m := obj.GetObjectMeta()
	_, _, err := s.store.GetRaw(r.Context(), rt.res.Resource, m.Namespace, m.Name)
	switch {
	case err == nil:
		return fmt.Errorf("dry run create: %w", storage.ErrExists)
	case errors.Is(err, storage.ErrNotFound):
		return nil
	default:
		return err
	}
}

// dryRunDelete answers a dry-run delete: the object as it is, after the
// checks a real delete makes (it exists, the precondition holds, a
// protected namespace stays).
func (s *Server) dryRunDelete(r *http.Request, rt route, precondRV string) (api.Object, error) {
	if rt.res.Resource == "namespaces" && isProtectedNamespace(rt.name) {
		return nil, api.NewStatusError(http.StatusForbidden, api.StatusReasonForbidden, "namespaces %q is forbidden: this namespace may not be deleted", rt.name)
	}
	cur, err := s.store.Get(r.Context(), rt.res.Resource, rt.namespace, rt.name)
	if err != nil {
		return nil, err
	}
	if precondRV != "" && precondRV != cur.GetObjectMeta().ResourceVersion {
		return nil, api.NewConflict(resourceName(rt.res), rt.name, "the resourceVersion precondition does not hold")
	}
	return cur, nil
}
