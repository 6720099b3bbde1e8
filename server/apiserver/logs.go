package apiserver

import (
	"net/http"

	"github.com/skiffhq/skiff/api"
)

// serveLogs answers GET .../pods/{name}/log: it finds the pod, picks the
// container as kube-apiserver does (the query's, or the only one), and
// hands the request to the Logs hook, which proxies to the pod's agent.
func (s *Server) serveLogs(w http.ResponseWriter, r *http.Request, rt route) {
	obj, err := s.store.Get(r.Context(), rt.res.Resource, rt.namespace, rt.name)
	if err != nil {
		s.writeError(w, r, err, rt.res, rt.name)
		return
	}
	pod, ok := obj.(*api.Pod)
	if !ok {
		writeStatus(w, api.NewBadRequest("logs exist only for pods"))
		return
	}
	container, serr := pickContainer(pod, r.URL.Query().Get("container"))
	if serr != nil {
		writeStatus(w, serr)
		return
	}
	if pod.Spec.NodeName == "" {
		writeStatus(w, api.NewBadRequest("pod %s is not scheduled to a node yet, so it has no logs", pod.Name))
		return
	}
	if s.logs == nil {
		writeStatus(w, api.NewStatusError(http.StatusServiceUnavailable, api.StatusReasonServiceUnavailable, "this server does not proxy logs"))
		return
	}
	s.logs(w, r, pod, container)
}
