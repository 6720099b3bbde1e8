package apiserver

import (
	"net/http"
	"strings"

	"github.com/skiffhq/skiff/api"
)

// Streaming subresources of pods (kubectl exec, attach, port-forward),
// and the one skiff refuses (kubectl debug's ephemeral containers).
const (
	subExec                = "exec"
	subAttach              = "attach"
	subPortForward         = "portforward"
	subEphemeralContainers = "ephemeralcontainers"
)

// isStreamSub reports whether sub is a streaming subresource.
func isStreamSub(sub string) bool {
	return sub == subExec || sub == subAttach || sub == subPortForward
}

// StreamFunc serves a streaming subresource (sub is "exec", "attach" or
// "portforward") of a pod that exists and runs on a node; container is
// the query's, checked against the pod (defaulted when it has one
// container), and "" for portforward.
type StreamFunc func(w http.ResponseWriter, r *http.Request, sub string, pod *api.Pod, container string)

// serveStream answers GET and POST .../pods/{name}/{exec,attach,portforward}.
func (s *Server) serveStream(w http.ResponseWriter, r *http.Request, rt route) {
	if r.Method != http.MethodGet && r.Method != http.MethodPost {
		s.methodNotAllowed(w, r)
		return
	}
	obj, err := s.store.Get(r.Context(), rt.res.Resource, rt.namespace, rt.name)
	if err != nil {
		s.writeError(w, r, err, rt.res, rt.name)
		return
	}
	pod, ok := obj.(*api.Pod)
	if !ok {
		writeStatus(w, api.NewBadRequest("%s exists only for pods", rt.sub))
		return
	}
	container := ""
	if rt.sub != subPortForward {
		c, serr := pickContainer(pod, r.URL.Query().Get("container"))
		if serr != nil {
			writeStatus(w, serr)
			return
		}
		container = c
	}
	switch {
	case pod.Spec.NodeName == "":
		writeStatus(w, api.NewBadRequest("pod %s does not have a host assigned", pod.Name))
		return
	case pod.Status.Phase == api.PodSucceeded || pod.Status.Phase == api.PodFailed:
		writeStatus(w, api.NewBadRequest("cannot %s a container in a completed pod; current phase is %s", verbPhrase(rt.sub), pod.Status.Phase))
		return
	case s.streams == nil:
		writeStatus(w, api.NewStatusError(http.StatusServiceUnavailable, api.StatusReasonServiceUnavailable, "this server does not serve %s", rt.sub))
		return
	}
	s.streams(w, r, rt.sub, pod, container)
}

func verbPhrase(sub string) string {
	switch sub {
	case subExec:
		return "exec into"
	case subAttach:
		return "attach to"
	}
	return "port-forward to"
}

// serveEphemeralContainers refuses kubectl debug. The Status is a
// NotFound with empty details, which kubectl reads as "ephemeral
// containers are disabled for this cluster" and prints with this
// message.
func (s *Server) serveEphemeralContainers(w http.ResponseWriter, _ *http.Request, rt route) {
	st := api.NewStatusError(http.StatusNotFound, api.StatusReasonNotFound,
		"skiff does not run ephemeral containers; use kubectl exec %s -- sh to get a shell in a running container", rt.name)
	st.Status.Details = &api.StatusDetails{}
	writeStatus(w, st)
}

// pickContainer picks the container as kube-apiserver does: the query's
// (checked against the pod), or the only one.
func pickContainer(pod *api.Pod, container string) (string, *api.StatusError) {
	var names []string
	for _, c := range pod.Spec.InitContainers {
		names = append(names, c.Name)
	}
	for _, c := range pod.Spec.Containers {
		names = append(names, c.Name)
	}
	switch {
	case container == "" && len(pod.Spec.Containers) == 1:
		return pod.Spec.Containers[0].Name, nil
	case container == "":
		return "", api.NewBadRequest("a container name must be specified for pod %s, choose one of: [%s]", pod.Name, strings.Join(names, " "))
	}
	for _, n := range names {
		if n == container {
			return container, nil
		}
	}
	return "", api.NewBadRequest("container %s is not valid for pod %s", container, pod.Name)
}
