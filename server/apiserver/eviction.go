package apiserver

import (
	"net/http"

	"github.com/skiffhq/skiff/api"
)

// eviction is policy/v1 Eviction, the body of POST pods/{name}/eviction
// that kubectl drain sends.
type eviction struct {
	Kind          string         `json:"kind,omitempty"`
	APIVersion    string         `json:"apiVersion,omitempty"`
	Metadata      api.ObjectMeta `json:"metadata"`
	DeleteOptions *deleteOptions `json:"deleteOptions,omitempty"`
}

// serveEviction answers POST pods/{name}/eviction with a graceful delete
// of the pod, as DELETE would do it, unless a PodDisruptionBudget that
// selects the pod would be broken (429, see checkDisruptionBudget).
func (s *Server) serveEviction(w http.ResponseWriter, r *http.Request, rt route) {
	if r.Method != http.MethodPost {
		s.methodNotAllowed(w, r)
		return
	}
	body, err := readBody(w, r)
	if err != nil {
		s.writeError(w, r, err, rt.res, rt.name)
		return
	}
	var ev eviction
	if err := decodeInto(r, body, &ev); err != nil {
		s.writeError(w, r, err, rt.res, rt.name)
		return
	}
	if (ev.Kind != "" && ev.Kind != "Eviction") || (ev.APIVersion != "" && ev.APIVersion != "policy/v1" && ev.APIVersion != "policy/v1beta1") {
		writeStatus(w, api.NewBadRequest("the body is a %s %s, but pods/eviction takes a policy/v1 Eviction", ev.APIVersion, ev.Kind))
		return
	}
	if m := ev.Metadata; m.Name != rt.name || (m.Namespace != "" && m.Namespace != rt.namespace) {
		writeStatus(w, api.NewBadRequest("name in URL does not match name in Eviction object"))
		return
	}
	pod := rt
	pod.sub = ""
	var opts deleteOptions
	if ev.DeleteOptions != nil {
		opts = *ev.DeleteOptions
	}
	if err := checkDryRun(opts.DryRun); err != nil {
		writeStatus(w, err)
		return
	}
	dryRun := len(opts.DryRun) > 0 || isDryRun(r)
	precondRV := ""
	if p := opts.Preconditions; p != nil {
		if p.ResourceVersion != nil {
			precondRV = *p.ResourceVersion
		}
		if p.UID != nil {
			cur, err := s.store.Get(r.Context(), pod.res.Resource, pod.namespace, pod.name)
			if err != nil {
				s.writeError(w, r, err, pod.res, pod.name)
				return
			}
			if uid := cur.GetObjectMeta().UID; uid != *p.UID {
				writeStatus(w, api.NewConflict("pods", pod.name, "Precondition failed: UID in precondition: "+*p.UID+", UID in object meta: "+uid))
				return
			}
		}
	}
	// Budget checks and the deletion they allow take turns, so two
	// evictions cannot both spend the last allowed disruption.
	s.evictionMu.Lock()
	defer s.evictionMu.Unlock()
	cur, err := s.store.Get(r.Context(), pod.res.Resource, pod.namespace, pod.name)
	if err != nil {
		s.writeError(w, r, err, pod.res, pod.name)
		return
	}
	if cur.GetObjectMeta().DeletionTimestamp == nil {
		if err := s.checkDisruptionBudget(r.Context(), cur.(*api.Pod)); err != nil {
			s.writeError(w, r, err, pod.res, pod.name)
			return
		}
	}
	if dryRun {
		// Everything is checked; nothing is deleted.
		if precondRV != "" && precondRV != cur.GetObjectMeta().ResourceVersion {
			writeStatus(w, api.NewConflict("pods", pod.name, "the resourceVersion precondition does not hold"))
			return
		}
		st := api.Status{Status: "Success", Code: http.StatusCreated}
		st.Kind, st.APIVersion = "Status", "v1"
		writeJSON(w, http.StatusCreated, &st)
		return
	}
	if _, done, err := s.gracefulPodDelete(r, pod, opts.GracePeriodSeconds, precondRV); err != nil || !done {
		if err == nil {
			_, err = s.store.Delete(r.Context(), pod.res.Resource, pod.namespace, pod.name, precondRV)
		}
		if err != nil {
			s.writeError(w, r, err, pod.res, pod.name)
			return
		}
	}
	st := api.Status{Status: "Success", Code: http.StatusCreated}
	st.Kind, st.APIVersion = "Status", "v1"
	writeJSON(w, http.StatusCreated, &st)
}
