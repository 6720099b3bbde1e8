package server

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/server/controllers"
	"github.com/skiffhq/skiff/storage"
)

// HeartbeatPath is the agent's lightweight heartbeat call (the pattern;
// {name} is the node). It counts as a heartbeat like a status write, but
// carries no body: nothing is decoded or written, and the Node is looked
// up in memory (nodeIndex), so a fleet's heartbeats cost the server little
// more than their TLS. Agents
// send their full conditions only when they change, and a snapshot every
// few minutes.
const HeartbeatPath = "/api/v1/skiff/nodes/{name}/heartbeat"

// heartbeat answers POST HeartbeatPath with 204, or 205 when the Node's
// stored Ready condition is the controller's Unknown (the agent then
// sends its full conditions): a node may beat only for itself, an admin
// for any node (simulated fleets).
func (s *server) heartbeat(w http.ResponseWriter, r *http.Request) {
	name := nodeCallName(r)
	id := identityFrom(r.Context())
	if !id.Admin && id.Node != name {
		writeStatus(w, forbidden(id.String()+" may send heartbeats only for its own node"))
		return
	}
	if errs := api.ValidateNodeName(name); errs != "" {
		writeStatus(w, api.NewBadRequest("node name %q: %s", name, errs))
		return
	}
	if unknown, ok := s.knownNode(w, r, name); ok {
		s.heard(w, name, s.clk.Now(), unknown)
	}
}

// knownNode checks that Node name exists (an agent whose Node was
// deleted learns it, and registers again) and says whether its Ready is
// the controller's Unknown. When it cannot tell, or the Node is gone, it
// answers (503, 404) and returns ok false.
func (s *server) knownNode(w http.ResponseWriter, r *http.Request, name string) (unknown, ok bool) {
	exists, unknown, err := s.nodeState(r.Context(), name)
	if err != nil {
		writeStatus(w, api.NewStatusError(http.StatusServiceUnavailable, api.StatusReasonServiceUnavailable, "cannot read node %s", name))
		return false, false
	}
	if !exists {
		writeStatus(w, api.NewStatusError(http.StatusNotFound, api.StatusReasonNotFound, "nodes %q not found", name))
		return false, false
	}
	return unknown, true
}

// heard records that the node's agent was heard from at now (a
// heartbeat, a usage report) and answers 204, or 205 when the node
// lifecycle controller marked it unreachable (Ready=Unknown) while it was
// silent: the agent believes its conditions unchanged, and 205 asks it
// to send them again.
func (s *server) heard(w http.ResponseWriter, name string, now time.Time, unknown bool) {
	s.liveness.Beat(name, now)
	if unknown {
		w.WriteHeader(http.StatusResetContent)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// statusUnknownReason is in a stored Node's JSON while the controller's
// Ready=Unknown condition stands, until the agent writes its own.
var statusUnknownReason = []byte(`"reason":"` + controllers.ReasonNodeStatusUnknown + `"`)

// nodeState says whether Node name exists and whether its Ready is the
// controller's Unknown: from the node index once it has loaded, else
// from the raw row (no decode). The fleet's periodic calls (heartbeats,
// usage reports) ask it, so a warm server answers them without a store
// read.
func (s *server) nodeState(ctx context.Context, name string) (exists, unknown bool, err error) {
	exists, unknown, ok := s.nodeIdx.lookup(name)
	if ok {
		return exists, unknown, nil
	}
	raw, _, err := s.store.GetRaw(ctx, "nodes", "", name)
	if errors.Is(err, storage.ErrNotFound) {
		return false, false, nil
	}
	if err != nil {
		return false, false, err
	}
	return true, bytes.Contains(raw, statusUnknownReason), nil
}
