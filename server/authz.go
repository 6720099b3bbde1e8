package server

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/fields"
	"github.com/skiffhq/skiff/server/apiserver"
	"github.com/skiffhq/skiff/server/auth"
	"github.com/skiffhq/skiff/storage"
)

// MirrorAnnotation marks a mirror pod: the API copy of a static pod an
// agent runs from its pod-manifests directory. A node may create pods
// only with it and bound to itself.
const MirrorAnnotation = api.MirrorPodAnnotation

// authorizeResource is the apiserver's Authorize hook. Admins may do
// anything; for a node it looks up the facts auth.Authorize (the node
// authorizer) needs; every other identity is judged by RBAC. A denial is
// a 403 with the reason.
func (s *server) authorizeResource(r *http.Request, a apiserver.Attributes) error {
	if ri := requestInfoFrom(r.Context()); ri != nil {
		ri.attrs = a
		ri.attrs.FieldSelector = nil // not for the audit log
	}
	id := identityFrom(r.Context())
	if !id.Admin && id.Node == "" {
		ok, reason, err := s.authorizeUser(r.Context(), id, rbacAttributes(a, a.APIGroup))
		if err != nil {
			return err
		}
		if !ok {
			return forbidden(reason)
		}
		return nil
	}
	req := auth.Request{
		Verb:          auth.Verb(a.Verb),
		Resource:      a.Resource,
		Subresource:   a.Subresource,
		Namespace:     a.Namespace,
		Name:          a.Name,
		FieldSelector: a.FieldSelector,
	}
	if !id.Admin && id.Node != "" {
		if err := s.nodeFacts(r, id.Node, &req); err != nil {
			return err
		}
	}
	if d := auth.Authorize(id, req); !d.Allowed {
		return forbidden(d.Reason)
	}
	return nil
}

// nodeFacts fills the facts of req that auth.Authorize reads for a node.
func (s *server) nodeFacts(r *http.Request, node string, req *auth.Request) error {
	ctx := r.Context()
	switch req.Resource {
	case auth.ResourceNodes:
		if req.Verb == auth.VerbCreate && req.Subresource == "" {
			// Registration: the name is in the body.
			n := &api.Node{}
			ok, err := peekBody(r, n)
			if err != nil {
				return err
			}
			if ok {
				req.Name = n.Name
			}
		}
	case auth.ResourcePods:
		switch {
		case req.Verb == auth.VerbCreate && req.Subresource == "":
			pod, err := peekPod(r)
			if err != nil {
				return err
			}
			if pod != nil {
				req.Name = pod.Name
				_, mirror := pod.Annotations[MirrorAnnotation]
				req.IsMirrorForSelf = mirror && pod.Spec.NodeName == node
			}
		case req.Name != "":
			node, err := s.store.NodeOf(ctx, auth.ResourcePods, req.Namespace, req.Name)
			if errors.Is(err, storage.ErrNotFound) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("authorize: read pod: %w", err)
			}
			req.BoundToNode = node
		}
	case auth.ResourceVolumes:
		if req.Name == "" {
			return nil
		}
		obj, err := s.store.Get(ctx, auth.ResourceVolumes, "", req.Name)
		if errors.Is(err, storage.ErrNotFound) {
			req.VolumeMissing = true
			return nil
		}
		if err != nil {
			return fmt.Errorf("authorize: read volume: %w", err)
		}
		if pv, ok := obj.(*api.PersistentVolume); ok {
			req.VolumeNode = pinnedTo(pv)
		}
	case auth.ResourceSecrets, auth.ResourceConfigMaps, auth.ResourceClaims:
		name := req.Name
		if name == "" {
			name = req.FieldSelector[auth.FieldMetadataName]
		}
		if name == "" || req.Namespace == "" {
			return nil
		}
		ok, err := s.referencedByNodePods(r, node, req.Resource, req.Namespace, name)
		if err != nil {
			return err
		}
		req.ReferencedByNodePods = ok
	}
	return nil
}

// referencedByNodePods reports whether a pod in namespace bound to node,
// other than a mirror pod, references the secret or configmap name.
func (s *server) referencedByNodePods(r *http.Request, node, resource, namespace, name string) (bool, error) {
	sel, err := fields.SelectorFromSet(fields.Set{auth.FieldSpecNodeName: node})
	if err != nil {
		return false, fmt.Errorf("authorize: %w", err)
	}
	objs, _, err := s.store.List(r.Context(), auth.ResourcePods, storage.ListOptions{Namespace: namespace, Fields: sel})
	if err != nil {
		return false, fmt.Errorf("authorize: list pods of node: %w", err)
	}
	for _, o := range objs {
		pod, ok := o.(*api.Pod)
		if !ok {
			continue
		}
		if _, mirror := pod.Annotations[MirrorAnnotation]; mirror {
			// A mirror pod is the node's own word, not the cluster's: it
			// grants nothing (and admission refuses references in it).
			continue
		}
		if podReferences(pod, resource, name) {
			return true, nil
		}
	}
	return false, nil
}

// podReferences reports whether pod uses the secret (resource "secrets")
// or configmap ("configmaps") name: as a volume, an env valueFrom, or
// (secrets) an image pull secret.
func podReferences(pod *api.Pod, resource, name string) bool {
	if resource == auth.ResourceClaims {
		for _, v := range pod.Spec.Volumes {
			if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == name {
				return true
			}
		}
		return false
	}
	secret := resource == auth.ResourceSecrets
	for _, v := range pod.Spec.Volumes {
		if secret && v.Secret != nil && v.Secret.SecretName == name ||
			!secret && v.ConfigMap != nil && v.ConfigMap.Name == name {
			return true
		}
	}
	if secret {
		for _, ref := range pod.Spec.ImagePullSecrets {
			if ref.Name == name {
				return true
			}
		}
	}
	for _, cs := range [][]api.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range cs {
			for _, f := range c.EnvFrom {
				if secret && f.SecretRef != nil && f.SecretRef.Name == name ||
					!secret && f.ConfigMapRef != nil && f.ConfigMapRef.Name == name {
					return true
				}
			}
			for _, e := range c.Env {
				if e.ValueFrom == nil {
					continue
				}
				if secret && e.ValueFrom.SecretKeyRef != nil && e.ValueFrom.SecretKeyRef.Name == name ||
					!secret && e.ValueFrom.ConfigMapKeyRef != nil && e.ValueFrom.ConfigMapKeyRef.Name == name {
					return true
				}
			}
		}
	}
	return false
}

// peekPod reads a pod create's body (at most apiserver.MaxBodyBytes) and
// puts it back for the handler. A body that does not decode gives a nil
// pod: the request is then judged without its facts, and if allowed the
// handler reports the decoding error.
func peekPod(r *http.Request) (*api.Pod, error) {
	pod := &api.Pod{}
	ok, err := peekBody(r, pod)
	if err != nil || !ok {
		return nil, err
	}
	return pod, nil
}

// peekBody decodes a create's body into obj and puts the body back for
// the handler; ok is false when it does not decode.
func peekBody(r *http.Request, obj any) (ok bool, err error) {
	if r.ContentLength > apiserver.MaxBodyBytes {
		return false, tooLarge()
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, apiserver.MaxBodyBytes+1))
	if err != nil {
		return false, api.NewBadRequest("read request body: %v", err)
	}
	if len(b) > apiserver.MaxBodyBytes {
		return false, tooLarge()
	}
	r.Body = io.NopCloser(bytes.NewReader(b))
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch mt {
	case "application/yaml", "application/x-yaml", "text/yaml":
		err = api.DecodeYAML(b, obj)
	default:
		err = api.DecodeJSON(b, obj)
	}
	return err == nil, nil
}

func tooLarge() error {
	return api.NewStatusError(http.StatusRequestEntityTooLarge, api.StatusReasonRequestEntityTooLarge,
		"the request body is larger than %d bytes", apiserver.MaxBodyBytes)
}

// pinnedTo returns the node a volume's node affinity names (a
// kubernetes.io/hostname In [node] term), or "".
func pinnedTo(pv *api.PersistentVolume) string {
	na := pv.Spec.NodeAffinity
	if na == nil || na.Required == nil {
		return ""
	}
	for _, t := range na.Required.NodeSelectorTerms {
		for _, r := range t.MatchExpressions {
			if r.Key == "kubernetes.io/hostname" && r.Operator == "In" && len(r.Values) == 1 {
				return r.Values[0]
			}
		}
	}
	return ""
}
