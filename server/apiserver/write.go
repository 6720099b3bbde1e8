package apiserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/server/servicealloc"
	"github.com/skiffhq/skiff/storage"
)

// decodeBodyObject reads and strictly decodes the request body into a new
// object of rt's kind, checking apiVersion/kind when the body gives them.
func (s *Server) decodeBodyObject(w http.ResponseWriter, r *http.Request, rt route) (api.Object, error) {
	body, err := readBody(w, r)
	if err != nil {
		return nil, err
	}
	obj := rt.res.New()
	if err := decodeInto(r, body, obj); err != nil {
		return nil, err
	}
	tm := obj.GetTypeMeta()
	if (tm.Kind != "" && tm.Kind != rt.res.Kind) || (tm.APIVersion != "" && tm.APIVersion != rt.res.GroupVersion()) {
		return nil, api.NewBadRequest("the body is a %s %s, but the URL is for %s %s", tm.APIVersion, tm.Kind, rt.res.GroupVersion(), rt.res.Kind)
	}
	m := obj.GetObjectMeta()
	if rt.res.Namespaced {
		switch {
		case m.Namespace == "":
			m.Namespace = rt.namespace
		case rt.namespace != "" && m.Namespace != rt.namespace:
			return nil, api.NewBadRequest("the namespace of the provided object (%s) does not match the namespace sent on the request (%s)", m.Namespace, rt.namespace)
		}
	}
	if rt.name != "" {
		if m.Name == "" {
			m.Name = rt.name
		} else if m.Name != rt.name {
			return nil, api.NewBadRequest("the name of the object (%s) does not match the name on the URL (%s)", m.Name, rt.name)
		}
	}
	return obj, nil
}

// requireNamespace refuses writes into a namespace that does not exist.
func (s *Server) requireNamespace(r *http.Request, ns string) error {
	if ns == "" {
		return nil
	}
	if _, _, err := s.store.GetRaw(r.Context(), "namespaces", "", ns); err != nil {
		if errors.Is(err, storage.ErrNotFound) {
			return api.NewNotFound("namespaces", ns)
		}
		return err
	}
	return nil
}

func (s *Server) create(w http.ResponseWriter, r *http.Request, rt route) {
	obj, err := s.decodeBodyObject(w, r, rt)
	if err != nil {
		s.writeError(w, r, err, rt.res, "")
		return
	}
	m := obj.GetObjectMeta()
	if err := s.requireNamespace(r, m.Namespace); err != nil {
		s.writeError(w, r, err, rt.res, m.Name)
		return
	}
	if errs := api.ValidateListLengths(obj); len(errs) > 0 {
		// Before defaulting, which would inflate every item.
		s.writeError(w, r, errs, rt.res, m.Name)
		return
	}
	prepareForCreate(obj, s.clock.Now())
	if pod, ok := obj.(*api.Pod); ok {
		if err := s.pinToVolumeNodes(r.Context(), pod); err != nil {
			s.writeError(w, r, err, rt.res, m.Name)
			return
		}
	}
	generate := m.Name == "" && m.GenerateName != ""
	for attempt := 0; ; attempt++ {
		if generate {
			m.Name = generatedName(m.GenerateName)
		}
		api.SetDefaults(obj)
		if errs := api.Validate(obj); len(errs) > 0 {
			s.writeError(w, r, errs, rt.res, m.Name)
			return
		}
		if err := s.admitWrite(r, rt, obj, nil); err != nil {
			s.writeError(w, r, err, rt.res, m.Name)
			return
		}
		if isDryRun(r) {
			if svc, ok := obj.(*api.Service); ok {
				// Check the allocation as a real create would, and keep none.
				resv, err := s.reserveService(r.Context(), svc, nil)
				if err != nil {
					s.writeError(w, r, err, rt.res, m.Name)
					return
				}
				resv.Rollback()
			}
			err = s.dryRunCreate(r, rt, obj)
			if err == nil {
				writeJSON(w, http.StatusCreated, obj)
				return
			}
			if generate && errors.Is(err, storage.ErrExists) && attempt < 8 {
				continue
			}
			break
		}
		if ev, ok := obj.(*api.Event); ok {
			// Events go through the sink, which folds repeats into the
			// stored event (200 with it) instead of adding another.
			out, created, err := s.events.Record(r.Context(), ev)
			if err != nil {
				s.writeError(w, r, err, rt.res, m.Name)
			} else if created {
				writeJSON(w, http.StatusCreated, out)
			} else {
				writeJSON(w, http.StatusOK, out)
			}
			return
		}
		if svc, ok := obj.(*api.Service); ok {
			err = s.writeService(r.Context(), svc, nil, func() error { return s.store.Create(r.Context(), svc) })
		} else {
			err = s.store.Create(r.Context(), obj)
		}
		if err == nil || !generate || !errors.Is(err, storage.ErrExists) || attempt >= 8 {
			break
		}
	}
	if err != nil {
		s.writeError(w, r, err, rt.res, m.Name)
		return
	}
	writeJSON(w, http.StatusCreated, obj)
}

func (s *Server) update(w http.ResponseWriter, r *http.Request, rt route) {
	next, err := s.decodeBodyObject(w, r, rt)
	if err != nil {
		s.writeError(w, r, err, rt.res, rt.name)
		return
	}
	out, err := s.applyUpdate(r, rt, func(api.Object) (api.Object, error) { return next, nil })
	if err != nil {
		s.writeError(w, r, err, rt.res, rt.name)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// applyUpdate runs a read-modify-write: build returns the client's
// intended object given the current one; the strategy, defaults, the
// resourceVersion precondition and validation are applied on every try.
func (s *Server) applyUpdate(r *http.Request, rt route, build func(cur api.Object) (api.Object, error)) (api.Object, error) {
	nodeStatus := rt.res.Resource == "nodes" && rt.sub == "status"
	var unpersisted api.Object // a heartbeat-only status write, answered but not stored
	var resv *servicealloc.Reservation
	var oldSvc, lastSvc *api.Service
	tryUpdate := func(cur api.Object) (api.Object, error) {
		unpersisted = nil
		next, err := build(cur)
		if err != nil {
			return nil, err
		}
		if errs := api.ValidateListLengths(next); len(errs) > 0 {
			return nil, errs
		}
		want := next.GetObjectMeta().ResourceVersion
		if want != "" && want != cur.GetObjectMeta().ResourceVersion {
			return nil, api.NewConflict(resourceName(rt.res), rt.name, "the object has been modified; please apply your changes to the latest version and try again")
		}
		out, err := prepareForUpdate(next, cur, rt.sub)
		if err != nil {
			return nil, err
		}
		api.SetDefaults(out)
		if svc, ok := out.(*api.Service); ok && rt.sub == "" {
			lastSvc = svc
			// fn may run again after a conflict: give back the last try's.
			resv.Rollback()
			oldSvc = cur.(*api.Service)
			if resv, err = s.reserveService(r.Context(), svc, oldSvc); err != nil {
				return nil, err
			}
		}
		if errs := api.ValidateUpdate(out, cur); len(errs) > 0 {
			return nil, errs
		}
		if err := s.admitWrite(r, rt, out, cur); err != nil {
			return nil, err
		}
		if nodeStatus && heartbeatOnly(out.(*api.Node), cur.(*api.Node), s.clock.Now(), s.heartbeatSnapshot) {
			// Storing cur unchanged is a no-op for the store: no write,
			// no fsync, no watch event.
			unpersisted = out
			return cur, nil
		}
		return out, nil
	}
	if isDryRun(r) {
		cur, err := s.store.Get(r.Context(), rt.res.Resource, rt.namespace, rt.name)
		if err != nil {
			return nil, err
		}
		rv := cur.GetObjectMeta().ResourceVersion
		out, err := tryUpdate(cur)
		resv.Rollback() // a dry run keeps no allocation
		if err != nil {
			return nil, err
		}
		if unpersisted != nil {
			out = unpersisted
		}
		out.GetObjectMeta().ResourceVersion = rv
		return out, nil
	}
	var out api.Object
	var err error
	for attempt := 0; ; attempt++ {
		out, err = s.store.GuaranteedUpdate(r.Context(), rt.res.Resource, rt.namespace, rt.name, tryUpdate)
		if resv == nil {
			break
		}
		var ce *storage.ClaimError
		if errors.As(err, &ce) {
			// Another server's Service holds what this write chose (or
			// the client asked for): see writeService.
			retry := resv.Held(ce.Claim)
			resv.Rollback()
			resv = nil
			if retry && attempt < maxClaimRetries {
				if err := s.resyncServices(r.Context()); err != nil {
					return nil, err
				}
				continue
			}
			return nil, servicealloc.HeldError(lastSvc, ce.Claim)
		}
		svc, _ := out.(*api.Service)
		s.settleReservation(resv, err, svc, oldSvc)
		break
	}
	if err != nil {
		return nil, err
	}
	if nodeStatus {
		s.liveness.Beat(rt.name, s.clock.Now())
		if unpersisted != nil {
			unpersisted.GetObjectMeta().ResourceVersion = out.GetObjectMeta().ResourceVersion
			return unpersisted, nil
		}
	}
	return out, nil
}

func resourceName(res *api.ResourceInfo) string {
	if res.Group == "" {
		return res.Resource
	}
	return res.Resource + "." + res.Group
}

func (s *Server) patch(w http.ResponseWriter, r *http.Request, rt route) {
	mt := mediaType(r)
	if !isPatchType(mt) {
		writeStatus(w, unsupportedPatch(r.Header.Get("Content-Type"), mt))
		return
	}
	body, err := readBody(w, r)
	if err != nil {
		s.writeError(w, r, err, rt.res, rt.name)
		return
	}
	out, err := s.applyUpdate(r, rt, func(cur api.Object) (api.Object, error) {
		if n, ok := cur.(*api.Node); ok && mt == strategicPatchType && rt.sub == "status" {
			if next, ok := nodeConditionsPatch(n, body); ok {
				return next, nil
			}
		}
		doc, err := json.Marshal(cur)
		if err != nil {
			return nil, err
		}
		next := rt.res.New()
		patched, err := applyPatch(mt, doc, body, next)
		if err != nil {
			return nil, err
		}
		if err := api.DecodeJSON(patched, next); err != nil {
			return nil, err
		}
		if m := next.GetObjectMeta(); m.Name != rt.name || m.Namespace != rt.namespace {
			return nil, api.NewBadRequest("a patch may not change metadata.name or metadata.namespace")
		}
		return next, nil
	})
	if err != nil {
		s.writeError(w, r, err, rt.res, rt.name)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// deleteOptions is the optional body of a DELETE (metav1.DeleteOptions).
type deleteOptions struct {
	APIVersion         string `json:"apiVersion,omitempty"`
	Kind               string `json:"kind,omitempty"`
	GracePeriodSeconds *int64 `json:"gracePeriodSeconds,omitempty"`
	Preconditions      *struct {
		UID             *string `json:"uid,omitempty"`
		ResourceVersion *string `json:"resourceVersion,omitempty"`
	} `json:"preconditions,omitempty"`
	PropagationPolicy *string  `json:"propagationPolicy,omitempty"`
	OrphanDependents  *bool    `json:"orphanDependents,omitempty"`
	DryRun            []string `json:"dryRun,omitempty"`
}

func (s *Server) delete(w http.ResponseWriter, r *http.Request, rt route) {
	// Deleting is how space is freed through the API, so it may spend
	// the store's space reserve on a full disk.
	r = r.WithContext(storage.UseReserve(r.Context()))
	var opts deleteOptions
	body, err := readBody(w, r)
	if err != nil {
		s.writeError(w, r, err, rt.res, rt.name)
		return
	}
	if len(body) > 0 {
		if err := api.DecodeJSON(body, &opts); err != nil {
			s.writeError(w, r, err, rt.res, rt.name)
			return
		}
		if err := checkDryRun(opts.DryRun); err != nil {
			writeStatus(w, err)
			return
		}
	}
	if g := r.URL.Query().Get("gracePeriodSeconds"); g != "" {
		v, err := strconv.ParseInt(g, 10, 64)
		if err != nil || v < 0 {
			writeStatus(w, api.NewBadRequest("gracePeriodSeconds must be a non-negative integer, not %q", g))
			return
		}
		opts.GracePeriodSeconds = &v
	}
	precondRV := ""
	if opts.Preconditions != nil && opts.Preconditions.ResourceVersion != nil {
		precondRV = *opts.Preconditions.ResourceVersion
	}
	if isDryRun(r) || len(opts.DryRun) > 0 {
		out, err := s.dryRunDelete(r, rt, precondRV)
		if err != nil {
			s.writeError(w, r, err, rt.res, rt.name)
			return
		}
		writeJSON(w, http.StatusOK, out)
		return
	}
	switch rt.res.Resource {
	case "pods":
		if out, done, err := s.gracefulPodDelete(r, rt, opts.GracePeriodSeconds, precondRV); err != nil || done {
			if err != nil {
				s.writeError(w, r, err, rt.res, rt.name)
			} else {
				writeJSON(w, http.StatusOK, out)
			}
			return
		}
	case "namespaces":
		if err := s.emptyNamespace(r, rt.name); err != nil {
			s.writeError(w, r, err, rt.res, rt.name)
			return
		}
	}
	out, err := s.store.Delete(r.Context(), rt.res.Resource, rt.namespace, rt.name, precondRV)
	if err != nil {
		s.writeError(w, r, err, rt.res, rt.name)
		return
	}
	if rt.res.Resource == "nodes" {
		s.liveness.Forget(rt.name)
	}
	if svc, ok := out.(*api.Service); ok {
		s.services.Release(svc)
	}
	writeJSON(w, http.StatusOK, out)
}

// gracefulPodDelete marks a pod bound to a node for deletion, so its agent
// stops the containers and then confirms with a forced delete. done is
// false when the pod should be removed from the store at once instead
// (unbound, already finished, or a zero grace period).
func (s *Server) gracefulPodDelete(r *http.Request, rt route, grace *int64, precondRV string) (api.Object, bool, error) {
	if grace != nil && *grace == 0 {
		return nil, false, nil
	}
	cur, err := s.store.Get(r.Context(), rt.res.Resource, rt.namespace, rt.name)
	if err != nil {
		return nil, false, err
	}
	pod := cur.(*api.Pod)
	if pod.Spec.NodeName == "" || pod.Status.Phase == api.PodSucceeded || pod.Status.Phase == api.PodFailed {
		return nil, false, nil
	}
	out, err := s.store.GuaranteedUpdate(r.Context(), rt.res.Resource, rt.namespace, rt.name, func(cur api.Object) (api.Object, error) {
		p, err := deepCopy(cur)
		if err != nil {
			return nil, err
		}
		m := p.GetObjectMeta()
		if precondRV != "" && precondRV != m.ResourceVersion {
			return nil, api.NewConflict("pods", rt.name, "the resourceVersion precondition does not hold")
		}
		g := int64(30)
		if ps := p.(*api.Pod).Spec.TerminationGracePeriodSeconds; ps != nil {
			g = *ps
		}
		if grace != nil {
			g = *grace
		}
		if m.DeletionTimestamp != nil {
			// Already terminating: a shorter grace period may replace a longer one.
			if m.DeletionGracePeriodSeconds != nil && *m.DeletionGracePeriodSeconds <= g {
				return p, nil
			}
		} else {
			m.DeletionTimestamp = api.NewTimePtr(s.clock.Now())
		}
		m.DeletionGracePeriodSeconds = &g
		return p, nil
	})
	return out, err == nil, err
}

// isProtectedNamespace reports the namespaces that may not be deleted.
func isProtectedNamespace(ns string) bool {
	return ns == "default" || ns == "kube-system" || ns == "skiff-system"
}

// emptyNamespace deletes every object in namespace ns, so deleting a
// namespace deletes what it holds.
func (s *Server) emptyNamespace(r *http.Request, ns string) error {
	if isProtectedNamespace(ns) {
		return api.NewStatusError(http.StatusForbidden, api.StatusReasonForbidden, "namespaces %q is forbidden: this namespace may not be deleted", ns)
	}
	for _, res := range s.resources {
		if !res.Namespaced {
			continue
		}
		objs, _, err := s.store.List(r.Context(), res.Resource, storage.ListOptions{Namespace: ns})
		if err != nil {
			return fmt.Errorf("list %s in namespace %s: %w", res.Resource, ns, err)
		}
		for _, o := range objs {
			out, err := s.store.Delete(r.Context(), res.Resource, ns, o.GetObjectMeta().Name, "")
			if err != nil && !errors.Is(err, storage.ErrNotFound) {
				return fmt.Errorf("delete %s %s/%s: %w", res.Resource, ns, o.GetObjectMeta().Name, err)
			}
			if svc, ok := out.(*api.Service); ok && err == nil {
				s.services.Release(svc)
			}
		}
	}
	return nil
}
