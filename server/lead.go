package server

import (
	"context"
	"fmt"

	"github.com/skiffhq/skiff/internal/supervise"
	"github.com/skiffhq/skiff/server/controllers"
	"github.com/skiffhq/skiff/server/ipam"
	"github.com/skiffhq/skiff/server/leader"
	"github.com/skiffhq/skiff/server/scheduler"
)

// leaderParts are the loops only the leader runs. Each leadership term
// gets new ones (their caches start from a fresh list), built by
// newScheduler and newControllers; setup builds the first set, so a bad
// configuration fails at start.
type leaderParts struct {
	sched    *scheduler.Scheduler
	ctrl     *controllers.Manager
	nodeIPAM *ipam.Controller
	used     bool // a term ran them: the next term builds new ones
}

func (s *server) leaderParts() leaderParts {
	s.partsMu.Lock()
	defer s.partsMu.Unlock()
	return s.parts
}

// newScheduler builds the scheduler and the node IPAM controller.
func (s *server) newScheduler() error {
	cfg := s.cfg
	sched, err := scheduler.New(scheduler.Config{
		Store: s.store, Clock: s.clk, Logger: s.log.With("component", "scheduler"),
		Recorder: s.events.NewRecorder("default-scheduler", ""),
		Scoring:  scheduler.Scoring(cfg.SchedulerScoring),
		Liveness: s.liveness.Last, NodeGrace: cfg.NodeMonitorGrace,
	})
	if err != nil {
		return fmt.Errorf("scheduler: %w", err)
	}
	nodeIPAM, err := ipam.NewController(ipam.Config{
		Store: s.store, ClusterCIDR: cfg.ClusterCIDR, Clock: s.clk, Logger: s.log.With("component", "node-ipam"),
		Recorder: s.events.NewRecorder("node-ipam-controller", ""),
	})
	if err != nil {
		return err
	}
	s.partsMu.Lock()
	s.parts.sched, s.parts.nodeIPAM = sched, nodeIPAM
	s.partsMu.Unlock()
	return nil
}

// newControllers builds the controller manager.
func (s *server) newControllers() error {
	cfg := s.cfg
	ctrl, err := controllers.New(controllers.Config{
		Store: s.store, Clock: s.clk, Logger: s.log.With("component", "controllers"),
		Recorder: func(component string) controllers.EventRecorder { return s.events.NewRecorder(component, "") },
		Liveness: s.liveness.Last, NodeMonitorGrace: cfg.NodeMonitorGrace, PodEvictionTimeout: cfg.PodEvictionTimeout,
		GCInterval: eventExpiryInterval,
		Bulk:       s.expectBulk,
		Sweeps: []controllers.Sweep{
			{Name: "events", Run: s.events.Expire},
			{Name: "join-tokens", Run: s.tokens.DeleteExpiredJoinTokens},
		},
	})
	if err != nil {
		return fmt.Errorf("controllers: %w", err)
	}
	s.partsMu.Lock()
	s.parts.ctrl = ctrl
	s.partsMu.Unlock()
	return nil
}

// campaign runs the leader's loops for every term this server leads,
// until ctx ends.
func (s *server) campaign(ctx context.Context) error {
	return leader.Run(ctx, leader.Config{
		Store: s.store, Holder: holderID(), Clock: s.clk, Logger: s.log.With("component", "leader"),
	}, s.lead)
}

// lead runs one term: the node IPAM controller, the controllers and the
// scheduler, each as configured, until ctx (which carries the term's
// fence) ends.
func (s *server) lead(ctx context.Context) {
	s.partsMu.Lock()
	used := s.parts.used
	s.parts.used = true
	s.partsMu.Unlock()
	if used {
		if err := s.newScheduler(); err != nil {
			s.log.Error("leading: building the scheduler failed", "err", err)
			return
		}
		if err := s.newControllers(); err != nil {
			s.log.Error("leading: building the controllers failed", "err", err)
			return
		}
	}
	p := s.leaderParts()
	// The term's loops run under their own supervisor: the first that
	// fails ends the term and, through s.loops, stops the server.
	g, _ := supervise.New(ctx, s.log)
	g.Go("node IPAM", p.nodeIPAM.Run)
	if s.cfg.DisableControllers {
		// The garbage collector normally expires events; without it,
		// they still go.
		g.Go("event expiry", func(ctx context.Context) error { return s.events.Run(ctx, eventExpiryInterval) })
	} else {
		g.Go("controllers", p.ctrl.Run)
	}
	if !s.cfg.DisableScheduler {
		g.Go("scheduler", p.sched.Run)
	}
	if err := g.Wait(); err != nil && ctx.Err() == nil {
		s.loops.Fail(fmt.Errorf("leader: %w", err))
	}
}
