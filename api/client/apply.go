package client

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/skiffhq/skiff/api"
)

// applyAttempts bounds how often Apply retries after losing a race
// (a conflict on update, or the object vanishing or appearing meanwhile).
const applyAttempts = 5

// ApplyAction says what ApplyObject did to the stored object.
type ApplyAction string

// What ApplyObject did, in the words `skiff apply` prints.
const (
	// ApplyCreated: the object did not exist and was created.
	ApplyCreated ApplyAction = "created"
	// ApplyConfigured: the object existed and the update changed it.
	ApplyConfigured ApplyAction = "configured"
	// ApplyUnchanged: the object existed and the update was a no-op (the
	// server kept its resourceVersion).
	ApplyUnchanged ApplyAction = "unchanged"
)

// Apply creates obj, or, when it exists already, updates it as kubectl
// apply does (see mergeApplied), with the stored object's current
// resourceVersion as precondition. created says which happened. A lost race (Conflict on the update,
// NotFound after AlreadyExists) is retried a few times, then returned.
// obj itself is not modified; its own resourceVersion is ignored.
func (c *Client) Apply(ctx context.Context, obj api.Object) (result api.Object, created bool, err error) {
	out, action, err := c.ApplyObject(ctx, obj)
	return out, action == ApplyCreated, err
}

// ApplyObject is Apply that also tells an update that changed the object
// (ApplyConfigured) from one that would not (ApplyUnchanged). An object
// that, with the API defaults applied, equals the stored one in everything
// a client writes is not sent at all; otherwise it is replaced, and an
// answer with the stored resourceVersion unmoved also counts as
// ApplyUnchanged.
func (c *Client) ApplyObject(ctx context.Context, obj api.Object) (api.Object, ApplyAction, error) {
	res, ns, err := resourceOf(obj)
	if err != nil {
		return nil, "", err
	}
	name := obj.GetObjectMeta().Name
	if name == "" {
		return nil, "", fmt.Errorf("apply %s: metadata.name is required", res.Kind)
	}
	obj, err = withLastApplied(obj)
	if err != nil {
		return nil, "", fmt.Errorf("apply %s %s: %w", res.Kind, name, err)
	}
	var lastErr error
	exists := false // whether the last answer said obj exists
	for range applyAttempts {
		if !exists {
			noRV := "" // a create must not carry one
			out, err := c.create(ctx, obj, &noRV)
			if err == nil {
				return out, ApplyCreated, nil
			}
			if !api.IsAlreadyExists(err) {
				return nil, "", err
			}
			exists, lastErr = true, err
		}
		cur, err := c.Get(ctx, res, ns, name)
		if api.IsNotFound(err) {
			exists, lastErr = false, err // deleted meanwhile: create again
			continue
		}
		if err != nil {
			return nil, "", err
		}
		if sameAsStored(res, obj, cur) {
			return cur, ApplyUnchanged, nil // nothing to write
		}
		merged, changed, err := mergeApplied(res, obj, cur)
		if err != nil {
			return nil, "", fmt.Errorf("apply %s %s: %w", res.Kind, qualifiedName(ns, name), err)
		}
		if !changed {
			return cur, ApplyUnchanged, nil
		}
		rv := cur.GetObjectMeta().ResourceVersion
		out, err := c.put(ctx, merged, "", &rv)
		switch {
		case err == nil && out.GetObjectMeta().ResourceVersion == rv:
			return out, ApplyUnchanged, nil
		case err == nil:
			return out, ApplyConfigured, nil
		case api.IsConflict(err):
			lastErr = err // changed meanwhile: read it again
		case api.IsNotFound(err):
			exists, lastErr = false, err
		default:
			return nil, "", err
		}
	}
	return nil, "", fmt.Errorf("apply %s %s: gave up after %d attempts: %w", res.Kind, qualifiedName(ns, name), applyAttempts, lastErr)
}

func qualifiedName(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}

// serverOwnedMeta are the metadata fields a replace does not set: the
// server keeps the stored values.
var serverOwnedMeta = []string{"uid", "resourceVersion", "generation", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds"}

// sameAsStored reports whether replacing cur with obj would change
// nothing: obj with the API defaults applied, cur's server-owned metadata
// and cur's status equals cur. Any doubt (an encoding error) says no, and
// the caller writes.
func sameAsStored(res api.ResourceInfo, obj, cur api.Object) bool {
	data, err := json.Marshal(obj)
	if err != nil {
		return false
	}
	want := res.New()
	if err := json.Unmarshal(data, want); err != nil {
		return false
	}
	api.SetTypeMeta(want)
	if res.Namespaced && want.GetObjectMeta().Namespace == "" {
		want.GetObjectMeta().Namespace = NamespaceDefault
	}
	api.SetDefaults(want)
	w, okW := asMap(want)
	c, okC := asMap(cur)
	if !okW || !okC {
		return false
	}
	wm, _ := w["metadata"].(map[string]any)
	cm, _ := c["metadata"].(map[string]any)
	if wm == nil || cm == nil {
		return false
	}
	for _, k := range serverOwnedMeta {
		if v, ok := cm[k]; ok {
			wm[k] = v
		} else {
			delete(wm, k)
		}
	}
	if res.HasStatus {
		if v, ok := c["status"]; ok {
			w["status"] = v
		} else {
			delete(w, "status")
		}
	}
	return reflect.DeepEqual(w, c)
}

// asMap is obj in the JSON data model.
func asMap(obj api.Object) (map[string]any, bool) {
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, false
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, false
	}
	return m, true
}
