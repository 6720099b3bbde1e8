package server

import (
	"errors"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/storage"
)

// HeartbeatPath is the agent's lightweight heartbeat call (the pattern;
// {name} is the node). It counts as a heartbeat like a status write, but
// carries no body: nothing is decoded or written, only the Node's row is
// looked up, so a fleet's heartbeats cost the server little more than
// their TLS. Agents
// send their full conditions only when they change, and a snapshot every
// few minutes.
const HeartbeatPath = "/api/v1/skiff/nodes/{name}/heartbeat"

// heartbeat answers POST HeartbeatPath with 204: a node may beat only for
// itself, an admin for any node (simulated fleets).
func (s *server) heartbeat(w http.ResponseWriter, r *http.Request) {
	name := chi.URLParam(r, "name")
	id := identityFrom(r.Context())
	if !id.Admin && id.Node != name {
		writeStatus(w, forbidden(id.String()+" may send heartbeats only for its own node"))
		return
	}
	if errs := api.ValidateNodeName(name); errs != "" {
		writeStatus(w, api.NewBadRequest("node name %q: %s", name, errs))
		return
	}
	// An existence check on the raw row (no decode), so an agent whose
	// Node was deleted learns it and registers again.
	if _, _, err := s.store.GetRaw(r.Context(), "nodes", "", name); err != nil {
		if errors.Is(err, storage.ErrNotFound) {
			writeStatus(w, api.NewStatusError(http.StatusNotFound, api.StatusReasonNotFound, "nodes %q not found", name))
			return
		}
		writeStatus(w, api.NewStatusError(http.StatusServiceUnavailable, api.StatusReasonServiceUnavailable, "cannot read node %s", name))
		return
	}
	s.liveness.Beat(name, s.clk.Now())
	w.WriteHeader(http.StatusNoContent)
}
