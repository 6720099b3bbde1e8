package client

import (
	"context"
	"fmt"

	"github.com/skiffhq/skiff/api"
)

// applyAttempts bounds how often Apply retries after losing a race
// (a conflict on update, or the object vanishing or appearing meanwhile).
const applyAttempts = 5

// Apply creates obj, or, when it exists already, replaces it with obj
// carrying the stored object's current resourceVersion, as `skiff apply`
// does. created says which happened. A lost race (Conflict on the update,
// NotFound after AlreadyExists) is retried a few times, then returned.
// obj itself is not modified; its own resourceVersion is ignored.
func (c *Client) Apply(ctx context.Context, obj api.Object) (result api.Object, created bool, err error) {
	res, ns, err := resourceOf(obj)
	if err != nil {
		return nil, false, err
	}
	name := obj.GetObjectMeta().Name
	if name == "" {
		return nil, false, fmt.Errorf("apply %s: metadata.name is required", res.Kind)
	}
	var lastErr error
	exists := false // whether the last answer said obj exists
	for range applyAttempts {
		if !exists {
			noRV := "" // a create must not carry one
			out, err := c.create(ctx, obj, &noRV)
			if err == nil {
				return out, true, nil
			}
			if !api.IsAlreadyExists(err) {
				return nil, false, err
			}
			exists, lastErr = true, err
		}
		cur, err := c.Get(ctx, res, ns, name)
		if api.IsNotFound(err) {
			exists, lastErr = false, err // deleted meanwhile: create again
			continue
		}
		if err != nil {
			return nil, false, err
		}
		rv := cur.GetObjectMeta().ResourceVersion
		out, err := c.put(ctx, obj, "", &rv)
		switch {
		case err == nil:
			return out, false, nil
		case api.IsConflict(err):
			lastErr = err // changed meanwhile: read it again
		case api.IsNotFound(err):
			exists, lastErr = false, err
		default:
			return nil, false, err
		}
	}
	return nil, false, fmt.Errorf("apply %s %s: gave up after %d attempts: %w", res.Kind, qualifiedName(ns, name), applyAttempts, lastErr)
}

func qualifiedName(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}
