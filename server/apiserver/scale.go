package apiserver

import (
	"encoding/json"
	"net/http"

	"github.com/skiffhq/skiff/api"
)

// scale is autoscaling/v1 Scale, the view of a Deployment's, ReplicaSet's
// or StatefulSet's replica count that kubectl scale (and autoscalers) read
// and write through {resource}/{name}/scale.
type scale struct {
	Kind       string         `json:"kind,omitempty"`
	APIVersion string         `json:"apiVersion,omitempty"`
	Metadata   api.ObjectMeta `json:"metadata"`
	Spec       scaleSpec      `json:"spec"`
	Status     scaleStatus    `json:"status"`
}

type scaleSpec struct {
	Replicas int32 `json:"replicas,omitempty"`
}

type scaleStatus struct {
	Replicas int32  `json:"replicas"`
	Selector string `json:"selector,omitempty"`
}

// scaled is what the Scale view reads and writes of an object with
// replicas: its spec.replicas, status.replicas and selector.
type scaled struct {
	meta     *api.ObjectMeta
	replicas **int32
	current  int32
	selector *api.LabelSelector
}

// scaledOf returns the scaled view of a Deployment, ReplicaSet or
// StatefulSet (the kinds with a scale subresource), or false.
func scaledOf(obj api.Object) (scaled, bool) {
	switch o := obj.(type) {
	case *api.Deployment:
		return scaled{&o.ObjectMeta, &o.Spec.Replicas, o.Status.Replicas, o.Spec.Selector}, true
	case *api.ReplicaSet:
		return scaled{&o.ObjectMeta, &o.Spec.Replicas, o.Status.Replicas, o.Spec.Selector}, true
	case *api.StatefulSet:
		return scaled{&o.ObjectMeta, &o.Spec.Replicas, o.Status.Replicas, o.Spec.Selector}, true
	}
	return scaled{}, false
}

// hasScale reports whether a resource has the scale subresource.
func hasScale(resource string) bool {
	return resource == "deployments" || resource == "replicasets" || resource == "statefulsets"
}

// scaleOf returns the Scale view of obj (one of scaledOf's kinds).
func scaleOf(obj api.Object) *scale {
	sc := &scale{Kind: "Scale", APIVersion: "autoscaling/v1"}
	v, ok := scaledOf(obj)
	if !ok {
		return sc
	}
	m := v.meta
	sc.Metadata = api.ObjectMeta{
		Name: m.Name, Namespace: m.Namespace, UID: m.UID,
		ResourceVersion: m.ResourceVersion, CreationTimestamp: m.CreationTimestamp,
	}
	if *v.replicas != nil {
		sc.Spec.Replicas = **v.replicas
	}
	sc.Status.Replicas = v.current
	if sel, err := v.selector.AsSelector(); err == nil && !sel.IsNothing() {
		sc.Status.Selector = sel.String()
	}
	return sc
}

// serveScale answers GET, PUT and PATCH of {resource}/{name}/scale (a
// dry run is honoured by applyUpdate). A
// PATCH may be a JSON merge patch or a strategic merge patch: a Scale has
// no lists, so the two mean the same.
func (s *Server) serveScale(w http.ResponseWriter, r *http.Request, rt route) {
	main := rt
	main.sub = ""
	switch r.Method {
	case http.MethodGet:
		obj, err := s.store.Get(r.Context(), rt.res.Resource, rt.namespace, rt.name)
		if err != nil {
			s.writeError(w, r, err, rt.res, rt.name)
			return
		}
		writeJSON(w, http.StatusOK, scaleOf(obj))
	case http.MethodPut:
		body, err := readBody(w, r)
		if err != nil {
			s.writeError(w, r, err, rt.res, rt.name)
			return
		}
		var want scale
		if err := decodeInto(r, body, &want); err != nil {
			s.writeError(w, r, err, rt.res, rt.name)
			return
		}
		s.writeScale(w, r, main, func(*scale) (*scale, error) { return &want, nil })
	case http.MethodPatch:
		switch mediaType(r) {
		case "application/merge-patch+json", "application/strategic-merge-patch+json":
		default:
			writeStatus(w, api.NewStatusError(http.StatusUnsupportedMediaType, api.StatusReasonUnsupportedMediaType,
				"the patch type %q is not supported on scale; use application/merge-patch+json or application/strategic-merge-patch+json", r.Header.Get("Content-Type")))
			return
		}
		body, err := readBody(w, r)
		if err != nil {
			s.writeError(w, r, err, rt.res, rt.name)
			return
		}
		s.writeScale(w, r, main, func(cur *scale) (*scale, error) {
			doc, err := json.Marshal(cur)
			if err != nil {
				return nil, err
			}
			patched, err := mergePatch(doc, body)
			if err != nil {
				return nil, err
			}
			var next scale
			if err := api.DecodeJSON(patched, &next); err != nil {
				return nil, err
			}
			return &next, nil
		})
	default:
		s.methodNotAllowed(w, r)
	}
}

// writeScale updates the deployment of rt to the replica count build
// returns for its current Scale, honouring the Scale's resourceVersion as
// a precondition, and answers the new Scale.
func (s *Server) writeScale(w http.ResponseWriter, r *http.Request, rt route, build func(cur *scale) (*scale, error)) {
	out, err := s.applyUpdate(r, rt, func(cur api.Object) (api.Object, error) {
		next, err := build(scaleOf(cur))
		if err != nil {
			return nil, err
		}
		if (next.Kind != "" && next.Kind != "Scale") || (next.APIVersion != "" && next.APIVersion != "autoscaling/v1") {
			return nil, api.NewBadRequest("the body is a %s %s, but the URL is for autoscaling/v1 Scale", next.APIVersion, next.Kind)
		}
		if m := next.Metadata; (m.Name != "" && m.Name != rt.name) || (m.Namespace != "" && m.Namespace != rt.namespace) {
			return nil, api.NewBadRequest("the name or namespace of the Scale does not match the URL")
		}
		if next.Spec.Replicas < 0 {
			return nil, api.NewInvalid("Scale", rt.name, api.FieldErrors{api.Invalid(api.NewPath("spec", "replicas"), next.Spec.Replicas, "must be greater than or equal to 0")})
		}
		d, err := deepCopy(cur)
		if err != nil {
			return nil, err
		}
		v, ok := scaledOf(d)
		if !ok {
			return nil, api.NewBadRequest("%s has no scale subresource", rt.res.Resource)
		}
		replicas := next.Spec.Replicas
		*v.replicas = &replicas
		v.meta.ResourceVersion = next.Metadata.ResourceVersion
		return d, nil
	})
	if err != nil {
		s.writeError(w, r, err, rt.res, rt.name)
		return
	}
	writeJSON(w, http.StatusOK, scaleOf(out))
}
