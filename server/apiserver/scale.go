package apiserver

import (
	"encoding/json"
	"net/http"

	"github.com/skiffhq/skiff/api"
)

// scale is autoscaling/v1 Scale, the view of a Deployment's replica count
// that kubectl scale (and autoscalers) read and write through
// deployments/{name}/scale.
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

// scaleOf returns the Scale view of a deployment.
func scaleOf(d *api.Deployment) *scale {
	sc := &scale{Kind: "Scale", APIVersion: "autoscaling/v1"}
	sc.Metadata = api.ObjectMeta{
		Name: d.Name, Namespace: d.Namespace, UID: d.UID,
		ResourceVersion: d.ResourceVersion, CreationTimestamp: d.CreationTimestamp,
	}
	if d.Spec.Replicas != nil {
		sc.Spec.Replicas = *d.Spec.Replicas
	}
	sc.Status.Replicas = d.Status.Replicas
	if sel, err := d.Spec.Selector.AsSelector(); err == nil && !sel.IsNothing() {
		sc.Status.Selector = sel.String()
	}
	return sc
}

// serveScale answers GET, PUT and PATCH of deployments/{name}/scale. A
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
		writeJSON(w, http.StatusOK, scaleOf(obj.(*api.Deployment)))
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
		next, err := build(scaleOf(cur.(*api.Deployment)))
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
		dep := d.(*api.Deployment)
		replicas := next.Spec.Replicas
		dep.Spec.Replicas = &replicas
		dep.ResourceVersion = next.Metadata.ResourceVersion
		return dep, nil
	})
	if err != nil {
		s.writeError(w, r, err, rt.res, rt.name)
		return
	}
	writeJSON(w, http.StatusOK, scaleOf(out.(*api.Deployment)))
}
