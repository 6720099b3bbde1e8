package scheduler

import (
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/clock"
	st "github.com/skiffhq/skiff/server/scheduler/schedtest"
)

func popNames(q *Queue, now time.Time) []string {
	var out []string
	for qp := q.Pop(now); qp != nil; qp = q.Pop(now) {
		out = append(out, qp.Pod.Name)
		q.Done(qp.Key)
	}
	return out
}

func TestQueueOrderPriorityThenAge(t *testing.T) {
	clk := clock.NewFake(st.Epoch)
	q := NewQueue()
	q.Add(NewPodInfo(st.Pod("young", "", "", st.Created(st.Epoch.Add(time.Minute)))), clk.Now())
	q.Add(NewPodInfo(st.Pod("old", "", "")), clk.Now())
	q.Add(NewPodInfo(st.Pod("vip", "", "", st.Priority(100), st.Created(st.Epoch.Add(time.Hour)))), clk.Now())
	q.Add(NewPodInfo(st.Pod("low", "", "", st.Priority(-5))), clk.Now())
	got := popNames(q, clk.Now())
	want := []string{"vip", "old", "young", "low"}
	if len(got) != len(want) {
		t.Fatalf("pop order = %v; want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("pop order = %v; want %v", got, want)
		}
	}
}

func TestQueueBackoffDoublesToTen(t *testing.T) {
	clk := clock.NewFake(st.Epoch)
	q := NewQueue()
	q.Add(NewPodInfo(st.Pod("p", "", "")), clk.Now())
	wantBackoff := []time.Duration{1, 2, 4, 8, 10, 10}
	for i, w := range wantBackoff {
		qp := q.Pop(clk.Now())
		if qp == nil {
			t.Fatalf("attempt %d: Pop = nil; want p", i+1)
		}
		q.Requeue(qp, false, clk.Now())
		clk.Advance(w*time.Second - time.Millisecond)
		if qp := q.Pop(clk.Now()); qp != nil {
			t.Fatalf("attempt %d: popped %v before its %v backoff ended", i+1, qp.Key, w*time.Second)
		}
		if at, ok := q.NextWake(); !ok || !at.Equal(clk.Now().Add(time.Millisecond)) {
			t.Fatalf("NextWake = %v %v; want %v", at, ok, clk.Now().Add(time.Millisecond))
		}
		clk.Advance(time.Millisecond)
	}
}

func TestQueueUnschedulableMovedByEventOrTimeout(t *testing.T) {
	clk := clock.NewFake(st.Epoch)
	q := NewQueue()
	q.Add(NewPodInfo(st.Pod("a", "", "")), clk.Now())
	q.Add(NewPodInfo(st.Pod("b", "", "")), clk.Now())
	a, b := q.Pop(clk.Now()), q.Pop(clk.Now())
	q.Requeue(a, true, clk.Now())
	q.Requeue(b, true, clk.Now())
	if _, _, u := q.Lens(); u != 2 {
		t.Fatalf("unschedulable = %d; want 2", u)
	}
	// Backoff alone does not bring unschedulable pods back.
	clk.Advance(30 * time.Second)
	if qp := q.Pop(clk.Now()); qp != nil {
		t.Fatalf("Pop = %s; want nothing before an event or 60 s", qp.Key)
	}
	q.MoveAll(clk.Now())
	if got := popNames(q, clk.Now()); len(got) != 2 {
		t.Fatalf("after MoveAll popped %v; want a and b", got)
	}

	// Timeout: a pod with no helpful event is retried after 60 s.
	q.Add(NewPodInfo(st.Pod("c", "", "")), clk.Now())
	c := q.Pop(clk.Now())
	q.Requeue(c, true, clk.Now())
	clk.Advance(MaxUnschedulableWait - time.Second)
	if qp := q.Pop(clk.Now()); qp != nil {
		t.Fatalf("Pop at 59 s = %s; want nothing", qp.Key)
	}
	clk.Advance(time.Second)
	if qp := q.Pop(clk.Now()); qp == nil || qp.Pod.Name != "c" {
		t.Fatalf("Pop at 60 s = %v; want c", qp)
	}
}

func TestQueueMoveDuringAttemptIsNotLost(t *testing.T) {
	clk := clock.NewFake(st.Epoch)
	q := NewQueue()
	q.Add(NewPodInfo(st.Pod("a", "", "")), clk.Now())
	a := q.Pop(clk.Now())
	q.MoveAll(clk.Now()) // e.g. a node was added while a was being scheduled
	q.Requeue(a, true, clk.Now())
	if act, back, un := q.Lens(); un != 0 || back != 1 || act != 0 {
		t.Fatalf("Lens = %d/%d/%d; want a in backoff, not unschedulable", act, back, un)
	}
	clk.Advance(time.Second)
	if qp := q.Pop(clk.Now()); qp == nil {
		t.Fatal("Pop after backoff = nil; want a")
	}
}

func TestQueueUpdateAndDelete(t *testing.T) {
	clk := clock.NewFake(st.Epoch)
	q := NewQueue()
	q.Add(NewPodInfo(st.Pod("a", "1", "")), clk.Now())
	a := q.Pop(clk.Now())
	q.Requeue(a, true, clk.Now())
	// A status-only update leaves it waiting.
	statusOnly := st.Pod("a", "1", "")
	statusOnly.Status.Message = "x"
	q.Add(NewPodInfo(statusOnly), clk.Now())
	if _, _, un := q.Lens(); un != 1 {
		t.Fatalf("after a status update unschedulable = %d; want 1", un)
	}
	// A spec update retries it (after its backoff).
	q.Add(NewPodInfo(st.Pod("a", "500m", "")), clk.Now())
	if _, back, un := q.Lens(); un != 0 || back != 1 {
		t.Fatalf("after a spec update backoff/unschedulable = %d/%d; want 1/0", back, un)
	}
	q.Delete("default/a")
	if q.Has("default/a") {
		t.Fatal("Has after Delete = true")
	}
	// Deleted while in flight: Requeue drops it.
	q.Add(NewPodInfo(st.Pod("b", "", "")), clk.Now())
	b := q.Pop(clk.Now())
	q.Delete(b.Key)
	q.Requeue(b, false, clk.Now())
	if act, back, un := q.Lens(); act+back+un != 0 || q.Has(b.Key) {
		t.Fatalf("Lens = %d/%d/%d; want empty", act, back, un)
	}
}
