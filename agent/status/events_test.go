package status

import (
	"context"
	"testing"
	"time"

	"github.com/skiffhq/skiff/agent/internal/agenttest"
	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/client"
	"github.com/skiffhq/skiff/internal/backoff"
	"github.com/skiffhq/skiff/internal/clock"
)

func startRecorder(t *testing.T, c EventCreator, clk *clock.Fake, queue int) *Recorder {
	t.Helper()
	r, err := NewRecorder(RecorderConfig{Client: c, NodeName: "n1", Clock: clk, Queue: queue, Logger: quiet,
		Backoff: backoff.Backoff{Min: retryMax / 4, Max: retryMax}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return r
}

func podEvents(t *testing.T, srv *agenttest.Server) []*api.Event {
	t.Helper()
	res, _ := api.LookupResource("events")
	objs, _, err := srv.Admin.List(context.Background(), res, "default", client.ListOptions{FieldSelector: "involvedObject.name=p"})
	if err != nil {
		t.Fatal(err)
	}
	var out []*api.Event
	for _, o := range objs {
		out = append(out, o.(*api.Event))
	}
	return out
}

func TestRecorderPostsAndServerFoldsRepeatsRealServer(t *testing.T) {
	srv := agenttest.StartServer(t)
	pod := srv.CreatePod(agenttest.Pod("p", "n1"))
	r := startRecorder(t, srv.NodeClient("n1"), clock.NewFake(time.Unix(1e9, 0)), 0)
	for i := 0; i < 3; i++ {
		r.Eventf(pod, api.EventTypeWarning, "BackOff", "Back-off restarting failed container %s", "c")
	}
	agenttest.Eventually(t, "the events sent", func() bool { return r.Pending() == 0 })
	evs := podEvents(t, srv)
	if len(evs) != 1 || evs[0].Count != 3 || evs[0].Reason != "BackOff" || evs[0].Source.Host != "n1" || evs[0].InvolvedObject.UID != pod.UID {
		t.Fatalf("events = %d (first %+v); want one BackOff event from n1 about the pod, count 3", len(evs), evs)
	}
}

func TestRecorderQueuesWhileServerDownAndBoundsQueueRealServer(t *testing.T) {
	srv := agenttest.StartServer(t)
	pod := srv.CreatePod(agenttest.Pod("p", "n1"))
	clk := clock.NewFake(time.Unix(1e9, 0))
	nodeClient := srv.NodeClient("n1")
	srv.Stop()
	r := startRecorder(t, nodeClient, clk, 2)
	r.Eventf(pod, api.EventTypeNormal, "First", "dropped: the queue holds 2")
	clk.BlockUntil(1) // the first send failed; the recorder backs off
	r.Eventf(pod, api.EventTypeNormal, "Second", "kept")
	r.Eventf(pod, api.EventTypeNormal, "Third", "kept")
	if n := r.Pending(); n != 2 {
		t.Fatalf("Pending() = %d; want the bound, 2", n)
	}
	srv.Start()
	agenttest.Pump(t, clk, retryMax, "the queued events sent", func() bool { return r.Pending() == 0 })
	got := map[string]bool{}
	for _, e := range podEvents(t, srv) {
		got[e.Reason] = true
	}
	if len(got) != 2 || !got["Second"] || !got["Third"] {
		t.Fatalf("events after the restart: %v; want Second and Third", got)
	}
}

func TestRecorderPostsNodeEventsRealServer(t *testing.T) {
	srv := agenttest.StartServer(t)
	r := startRecorder(t, srv.NodeClient("n1"), clock.NewFake(time.Unix(1e9, 0)), 0)
	r.NodeEventf(api.EventTypeWarning, "KubeletHasInsufficientMemory", "Node has condition %s", api.NodeMemoryPressure)
	agenttest.Eventually(t, "the event sent", func() bool { return r.Pending() == 0 })
	res, _ := api.LookupResource("events")
	objs, _, err := srv.Admin.List(context.Background(), res, "default", client.ListOptions{FieldSelector: "involvedObject.name=n1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 1 {
		t.Fatalf("node events = %d; want 1", len(objs))
	}
	ev := objs[0].(*api.Event)
	if ev.InvolvedObject.Kind != "Node" || ev.Reason != "KubeletHasInsufficientMemory" || ev.Message != "Node has condition MemoryPressure" {
		t.Errorf("event = %+v; want a Node event KubeletHasInsufficientMemory", ev)
	}
}
