package server

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/server/usage"
	"github.com/skiffhq/skiff/storage"
)

// NodeUsage is the answer to GET /api/v1/skiff/nodes/{name}/usage: the
// node's recent usage samples (see package usage for what they measure)
// and its latest heartbeat as the server saw it.
type NodeUsage struct {
	Node string `json:"node"`
	// IntervalSeconds is the time between samples.
	IntervalSeconds int `json:"intervalSeconds"`
	// LastHeartbeat is when the server last heard from the node's agent
	// (a status write, a heartbeat or a usage report) since it started
	// (exact, unlike the stored conditions' lastHeartbeatTime,
	// which may lag by minutes); absent when none has been seen.
	LastHeartbeat *time.Time     `json:"lastHeartbeat,omitempty"`
	Samples       []usage.Sample `json:"samples"`
	// Measured is what the node's agent measured (its usage reports):
	// CPU in milli-cores over each report's window (20 s) and memory working set,
	// oldest first, up to an hour; empty before two reports.
	Measured []usage.Rate `json:"measured"`
}

// nodeUsage serves GET /api/v1/skiff/nodes/{name}/usage (admin only). A
// node that does not exist is a 404 Status; one created since the last
// sample has no samples yet.
func (s *server) nodeUsage(w http.ResponseWriter, r *http.Request) {
	name := chi.URLParam(r, "name")
	samples, ok := s.usage.Samples(name)
	if !ok {
		if _, err := s.store.Get(r.Context(), "nodes", "", name); err != nil {
			if errors.Is(err, storage.ErrNotFound) {
				writeStatus(w, api.NewStatusError(http.StatusNotFound, api.StatusReasonNotFound, "nodes %q not found", name))
				return
			}
			s.log.LogAttrs(r.Context(), slog.LevelError, "node usage", slog.String("node", name), slog.Any("err", err))
			writeStatus(w, api.NewStatusError(http.StatusInternalServerError, api.StatusReasonInternalError, "internal error"))
			return
		}
		samples = []usage.Sample{}
	}
	out := NodeUsage{Node: name, IntervalSeconds: int(s.usage.Interval() / time.Second), Samples: samples, Measured: []usage.Rate{}}
	if hist := s.measured.History(name); len(hist) > 0 {
		out.Measured = hist
	}
	if t, ok := s.liveness.Last(name); ok {
		t = t.UTC()
		out.LastHeartbeat = &t
	}
	writeJSON(w, http.StatusOK, out)
}

// usageSourceWait bounds how long a usage sample waits for the
// scheduler's loop before it reads the store instead.
const usageSourceWait = 5 * time.Second

// usageFromScheduler is the usage recorder's Source: while this server
// leads, its scheduler's cache holds every node's figures, and a sample
// need not read 10,000 nodes and their pods from the store.
func (s *server) usageFromScheduler(ctx context.Context) ([]usage.NodeFigures, bool) {
	sched := s.leaderParts().sched
	if sched == nil {
		return nil, false
	}
	ctx, cancel := context.WithTimeout(ctx, usageSourceWait)
	defer cancel()
	nodes, ok := sched.UsageNow(ctx)
	if !ok {
		return nil, false
	}
	out := make([]usage.NodeFigures, len(nodes))
	for i, n := range nodes {
		out[i] = usage.NodeFigures{
			Name: n.Name, Ready: n.Ready, Pods: n.Pods,
			CPURequestedMilli: n.Requested.MilliCPU, CPUAllocatableMilli: n.Allocatable.MilliCPU,
			MemoryRequestedBytes: n.Requested.Memory, MemoryAllocatableBytes: n.Allocatable.Memory,
		}
	}
	return out, true
}
