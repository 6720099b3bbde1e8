package table

import (
	"fmt"
	"strconv"
	"time"

	"github.com/skiffhq/skiff/api"
)

// Pod status words that do not come from the API itself.
const (
	reasonTerminating     = "Terminating"
	reasonCompleted       = "Completed"
	reasonNotReady        = "NotReady"
	reasonRunning         = "Running"
	reasonUnknown         = "Unknown"
	reasonNodeLost        = "NodeLost"        // pod status reason of an unreachable node's pod
	reasonSchedulingGated = "SchedulingGated" // PodScheduled condition reason
	reasonPodInitializing = "PodInitializing" // waiting reason of containers behind init
)

// podSummary is what a pod's table row shows.
type podSummary struct {
	ready, total int
	status       string
	restarts     int
	lastRestart  time.Time // latest lastState.terminated.finishedAt; zero when unknown
}

// summarizePod computes READY, STATUS and RESTARTS exactly as kubectl's
// pod printer does. STATUS is, from weakest to strongest: the phase; the
// pod's status reason; the first unfinished init container
// ("Init:0/2", "Init:CrashLoopBackOff", "Init:ExitCode:1"); else the
// first app container's waiting or terminated reason ("ContainerCreating",
// "CrashLoopBackOff", "Completed", "ExitCode:137"), with "Completed" turned
// back into "Running"/"NotReady" while another container still runs; and
// finally "Terminating" once deletionTimestamp is set on a pod that has not
// finished ("Unknown" when its node was lost).
func summarizePod(p *api.Pod) podSummary {
	s := podSummary{total: len(p.Spec.Containers)}
	reason := string(p.Status.Phase)
	if p.Status.Reason != "" {
		reason = p.Status.Reason
	}
	for _, c := range p.Status.Conditions {
		if c.Type == api.PodScheduled && c.Reason == reasonSchedulingGated {
			reason = reasonSchedulingGated
		}
	}

	initializing := false
	for i, cs := range p.Status.InitContainerStatuses {
		s.restarts += int(cs.RestartCount)
		s.noteTermination(cs)
		term, wait := cs.State.Terminated, cs.State.Waiting
		if term != nil && term.ExitCode == 0 {
			continue // this init container is done
		}
		switch {
		case term != nil && term.Reason != "":
			reason = "Init:" + term.Reason
		case term != nil && term.Signal != 0:
			reason = fmt.Sprintf("Init:Signal:%d", term.Signal)
		case term != nil:
			reason = fmt.Sprintf("Init:ExitCode:%d", term.ExitCode)
		case wait != nil && wait.Reason != "" && wait.Reason != reasonPodInitializing:
			reason = "Init:" + wait.Reason
		default:
			reason = fmt.Sprintf("Init:%d/%d", i, len(p.Spec.InitContainers))
		}
		initializing = true
		break
	}

	if !initializing || hasCondition(p.Status.Conditions, api.PodInitialized) {
		// Restarts of finished init containers no longer count.
		s.restarts, s.lastRestart = 0, time.Time{}
		hasRunning := false
		for i := len(p.Status.ContainerStatuses) - 1; i >= 0; i-- {
			cs := p.Status.ContainerStatuses[i]
			s.restarts += int(cs.RestartCount)
			s.noteTermination(cs)
			term, wait := cs.State.Terminated, cs.State.Waiting
			switch {
			case wait != nil && wait.Reason != "":
				reason = wait.Reason
			case term != nil && term.Reason != "":
				reason = term.Reason
			case term != nil && term.Signal != 0:
				reason = fmt.Sprintf("Signal:%d", term.Signal)
			case term != nil:
				reason = fmt.Sprintf("ExitCode:%d", term.ExitCode)
			case cs.Ready && cs.State.Running != nil:
				hasRunning = true
				s.ready++
			}
		}
		if reason == reasonCompleted && hasRunning {
			reason = reasonNotReady
			if hasCondition(p.Status.Conditions, api.PodReady) {
				reason = reasonRunning
			}
		}
	}

	if p.DeletionTimestamp != nil {
		switch {
		case p.Status.Reason == reasonNodeLost:
			reason = reasonUnknown
		case p.Status.Phase != api.PodSucceeded && p.Status.Phase != api.PodFailed:
			reason = reasonTerminating
		}
	}
	s.status = reason
	return s
}

func (s *podSummary) noteTermination(cs api.ContainerStatus) {
	if t := cs.LastTerminationState.Terminated; t != nil && t.FinishedAt.After(s.lastRestart) {
		s.lastRestart = t.FinishedAt.Time
	}
}

// hasCondition reports whether condition typ is True.
func hasCondition(conds []api.PodCondition, typ string) bool {
	for _, c := range conds {
		if c.Type == typ {
			return c.Status == api.ConditionTrue
		}
	}
	return false
}

// restartsCell is "3", or "3 (5m ago)" when the last restart is known.
func (s podSummary) restartsCell(now time.Time) string {
	n := strconv.Itoa(s.restarts)
	if s.restarts != 0 && !s.lastRestart.IsZero() {
		return n + " (" + Age(s.lastRestart, now) + " ago)"
	}
	return n
}

// podConditions marks a finished pod's row the way Kubernetes does, so
// clients can tell finished pods apart.
func podConditions(phase api.PodPhase) []api.TableRowCondition {
	switch phase {
	case api.PodSucceeded:
		return []api.TableRowCondition{{Type: api.RowCompleted, Status: api.ConditionTrue,
			Reason: string(api.PodSucceeded), Message: "The pod has completed successfully."}}
	case api.PodFailed:
		return []api.TableRowCondition{{Type: api.RowCompleted, Status: api.ConditionTrue,
			Reason: string(api.PodFailed), Message: "The pod failed."}}
	}
	return nil
}

// podRow is NAME READY STATUS RESTARTS AGE | IP NODE NOMINATED-NODE
// READINESS-GATES. skiff has no readiness gates, so the last cell is
// always "<none>".
func podRow(p *api.Pod, now time.Time) api.TableRow {
	s := summarizePod(p)
	ip := p.Status.PodIP
	if len(p.Status.PodIPs) > 0 {
		ip = p.Status.PodIPs[0].IP
	}
	return api.TableRow{
		Cells: []any{
			p.Name, fmt.Sprintf("%d/%d", s.ready, s.total), s.status, s.restartsCell(now), Age(p.CreationTimestamp.Time, now),
			OrNone(ip), OrNone(p.Spec.NodeName), OrNone(p.Status.NominatedNodeName), none,
		},
		Conditions: podConditions(p.Status.Phase),
	}
}

// none is the cell of an empty value.
const none = "<none>"

// OrNone is s, or "<none>" when s is empty, as kubectl shows empty cells.
func OrNone(s string) string {
	if s == "" {
		return none
	}
	return s
}
