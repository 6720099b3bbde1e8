package events

import (
	"context"
	"fmt"
	"strconv"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/uid"
)

// Recorder records events about objects on behalf of one component (the
// scheduler, a controller), through a Sink.
type Recorder struct {
	sink   *Sink
	source api.EventSource
}

// NewRecorder returns a Recorder that signs its events with component
// (and host, when the component runs on a particular machine).
func (s *Sink) NewRecorder(component, host string) *Recorder {
	return &Recorder{sink: s, source: api.EventSource{Component: component, Host: host}}
}

// Eventf records an event of type typ (api.EventTypeNormal or
// api.EventTypeWarning) about obj. Failures are logged, not returned: an
// event is never worth failing the work it reports on.
func (r *Recorder) Eventf(ctx context.Context, obj api.Object, typ, reason, format string, args ...any) {
	r.Events(ctx, []Event{{Object: obj, Type: typ, Reason: reason, Message: fmt.Sprintf(format, args...)}})
}

func (r *Recorder) newEvent(obj api.Object, typ, reason, message string) *api.Event {
	api.SetTypeMeta(obj)
	m := obj.GetObjectMeta()
	tm := obj.GetTypeMeta()
	now := r.sink.clock.Now()
	ns := m.Namespace
	if ns == "" {
		ns = "default" // events about cluster-scoped objects, as Kubernetes does
	}
	ev := &api.Event{
		ObjectMeta: api.ObjectMeta{
			Name:              m.Name + "." + strconv.FormatInt(r.sink.stamp(now), 16),
			Namespace:         ns,
			UID:               uid.New(),
			CreationTimestamp: api.NewTime(now),
		},
		InvolvedObject: api.ObjectReference{
			Kind: tm.Kind, APIVersion: tm.APIVersion,
			Namespace: m.Namespace, Name: m.Name, UID: m.UID,
		},
		Reason:  reason,
		Message: message,
		Type:    typ,
		Source:  r.source,
	}
	api.SetTypeMeta(ev)
	return ev
}
