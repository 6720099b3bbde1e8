package scheduler

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
	st "github.com/skiffhq/skiff/server/scheduler/schedtest"
)

// TestUsageNow: the loop answers every node's figures from its cache:
// the pods bound there that have not finished, their requests, the
// node's allocatable and Ready. Before Run, and after it returns, there
// is no answer (the usage recorder then reads the store).
func TestUsageNow(t *testing.T) {
	h := startScheduler(t, Config{})
	h.create(
		st.Node("n1", "4", "8Gi"),
		st.Node("n2", "2", "4Gi", st.Condition(api.NodeReady, api.ConditionFalse)),
		st.Pod("a", "1", "1Gi", st.OnNode("n1")),
		st.Pod("b", "500m", "512Mi", st.OnNode("n1")),
		st.Pod("done", "1", "1Gi", st.OnNode("n1"), func(p *api.Pod) { p.Status.Phase = api.PodSucceeded }),
	)
	ctx := context.Background()
	var got []NodeUsage
	h.eventually("both nodes and both running pods in the answer", func() bool {
		us, ok := h.s.UsageNow(ctx)
		got = us
		return ok && len(us) == 2 && slices.ContainsFunc(us, func(u NodeUsage) bool { return u.Name == "n1" && u.Pods == 2 })
	})
	slices.SortFunc(got, func(a, b NodeUsage) int { return strings.Compare(a.Name, b.Name) })
	want := []NodeUsage{
		{Name: "n1", Ready: true, Pods: 2, Requested: Resources{MilliCPU: 1500, Memory: 1536 << 20}, Allocatable: Resources{MilliCPU: 4000, Memory: 8 << 30, EphemeralStorage: 100 << 30}},
		{Name: "n2", Ready: false, Pods: 0, Allocatable: Resources{MilliCPU: 2000, Memory: 4 << 30, EphemeralStorage: 100 << 30}},
	}
	if !slices.Equal(got, want) {
		t.Errorf("UsageNow = %+v; want %+v", got, want)
	}
}

func TestUsageNowWithoutALoop(t *testing.T) {
	s, err := New(Config{Store: startScheduler(t, Config{}).store})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan bool, 1)
	go func() { _, ok := s.UsageNow(context.Background()); done <- ok }()
	select {
	case ok := <-done:
		if ok {
			t.Error("UsageNow before Run answered; want no answer")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("UsageNow before Run waited; want it to return at once")
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- s.Run(ctx) }()
	cancel()
	<-ran
	if _, ok := s.UsageNow(context.Background()); ok {
		t.Error("UsageNow after Run returned answered; want no answer")
	}
}
