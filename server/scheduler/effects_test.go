package scheduler

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/server/events"
)

// logRecorder logs what it is asked to record, in order.
type logRecorder struct {
	mu  sync.Mutex
	log []string
	n   int
	all chan struct{} // closed at the n-th entry
}

func (r *logRecorder) add(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.log = append(r.log, s)
	if len(r.log) == r.n {
		close(r.all)
	}
}

func (r *logRecorder) Eventf(_ context.Context, obj api.Object, _, reason, format string, args ...any) {
	r.add("event " + obj.GetObjectMeta().Name + " " + reason)
}

func (r *logRecorder) Events(_ context.Context, evs []events.Event) {
	names := make([]string, len(evs))
	for i, e := range evs {
		names[i] = e.Object.GetObjectMeta().Name
	}
	r.add("batch " + strings.Join(names, ","))
}

// TestEffectsBatchEvents: the events queued together are recorded with
// one batch, in order with the status writes between them.
func TestEffectsBatchEvents(t *testing.T) {
	rec := &logRecorder{n: 4, all: make(chan struct{})}
	fx := newEffects(rec, func() { t.Error("an effect was dropped") })
	p := func(name string) *api.Pod {
		return &api.Pod{ObjectMeta: api.ObjectMeta{Name: name, Namespace: "default"}}
	}
	for i := range 3 {
		fx.event(p(fmt.Sprint("a", i)), api.EventTypeNormal, "Scheduled", "assigned")
	}
	fx.do(func(context.Context) { rec.add("status write") })
	fx.event(p("b"), api.EventTypeWarning, "FailedScheduling", "no fit")
	fx.do(func(context.Context) { rec.add("status write 2") })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go fx.run(ctx)
	select {
	case <-rec.all:
	case <-time.After(time.Minute):
		t.Fatalf("not all effects in a minute: %q", rec.log)
	}
	want := "batch a0,a1,a2; status write; batch b; status write 2"
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if got := strings.Join(rec.log, "; "); got != want {
		t.Errorf("recorded %q; want %q", got, want)
	}
}
