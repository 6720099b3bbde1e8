package status

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/backoff"
	"github.com/skiffhq/skiff/internal/clock"
)

// EventCreator is what the Recorder needs of the server: *client.Client.
type EventCreator interface {
	Create(ctx context.Context, obj api.Object) (api.Object, error)
}

// DefaultEventQueue bounds the events waiting to be sent.
const DefaultEventQueue = 1000

// EventComponent is the source component of the agent's events.
const EventComponent = "skiff-agent"

// maxEventMessage bounds an event's message, as Kubernetes' recorder
// does (1 KiB).
const maxEventMessage = 1024

// RecorderConfig configures a Recorder.
type RecorderConfig struct {
	Client   EventCreator
	NodeName string
	// Queue bounds the waiting events; when full the oldest is dropped.
	// Default DefaultEventQueue.
	Queue int
	// Clock stamps events and times retries. Default clock.Real.
	Clock clock.Clock
	// Backoff bounds the waits while the server is away.
	Backoff backoff.Backoff
	Logger  *slog.Logger
}

// Recorder posts core/v1 Events about pods, best effort: Eventf returns
// at once, one goroutine (Run) sends; while the server is away events
// wait (the oldest are dropped past the queue's bound); an event the
// server refuses is dropped. The server folds repeats into one event
// with a count.
type Recorder struct {
	cfg   RecorderConfig
	clock clock.Clock
	log   *slog.Logger

	notify chan struct{}

	mu      sync.Mutex
	queue   []*api.Event
	dropped int // since the last report
}

// NewRecorder returns a Recorder for cfg; start it with Run.
func NewRecorder(cfg RecorderConfig) (*Recorder, error) {
	if cfg.Client == nil || cfg.NodeName == "" {
		return nil, errors.New("event recorder: a client and a node name are required")
	}
	if cfg.Queue <= 0 {
		cfg.Queue = DefaultEventQueue
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Recorder{cfg: cfg, clock: clock.Or(cfg.Clock), log: log.With("component", "events"), notify: make(chan struct{}, 1)}, nil
}

// Eventf queues an event of eventType (api.EventTypeNormal or
// api.EventTypeWarning) about pod, with reason and a message made from
// messageFmt and args. It never blocks.
func (r *Recorder) Eventf(pod *api.Pod, eventType, reason, messageFmt string, args ...any) {
	if pod == nil {
		return
	}
	ns := pod.Namespace
	if ns == "" {
		ns = "default"
	}
	r.enqueue(pod.Name, api.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: ns, Name: pod.Name,
		UID: pod.UID, ResourceVersion: pod.ResourceVersion}, eventType, reason, fmt.Sprintf(messageFmt, args...))
}

// NodeEventf queues an event about the agent's own Node (in namespace
// "default", as the kubelet posts them), e.g. the eviction manager's
// pressure transitions. It never blocks.
func (r *Recorder) NodeEventf(eventType, reason, messageFmt string, args ...any) {
	r.enqueue(r.cfg.NodeName, api.ObjectReference{Kind: "Node", APIVersion: "v1", Name: r.cfg.NodeName, UID: r.cfg.NodeName},
		eventType, reason, fmt.Sprintf(messageFmt, args...))
}

// enqueue queues an event named after name about ref.
func (r *Recorder) enqueue(name string, ref api.ObjectReference, eventType, reason, msg string) {
	if len(msg) > maxEventMessage {
		msg = strings.ToValidUTF8(msg[:maxEventMessage], "")
	}
	ns := ref.Namespace
	if ns == "" {
		ns = "default"
	}
	now := r.clock.Now()
	ev := &api.Event{
		ObjectMeta:          api.ObjectMeta{Name: name + "." + randomSuffix(), Namespace: ns},
		InvolvedObject:      ref,
		Reason:              reason,
		Message:             msg,
		Type:                eventType,
		Source:              api.EventSource{Component: EventComponent, Host: r.cfg.NodeName},
		FirstTimestamp:      api.NewTime(now),
		LastTimestamp:       api.NewTime(now),
		Count:               1,
		ReportingController: EventComponent,
		ReportingInstance:   r.cfg.NodeName,
	}
	r.mu.Lock()
	if len(r.queue) >= r.cfg.Queue {
		r.queue = r.queue[1:]
		r.dropped++
	}
	r.queue = append(r.queue, ev)
	r.mu.Unlock()
	select {
	case r.notify <- struct{}{}:
	default:
	}
}

// randomSuffix makes event names unique, as Kubernetes' "<name>.<hex>".
func randomSuffix() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}

// Pending returns how many events wait to be sent.
func (r *Recorder) Pending() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.queue)
}

// Run sends queued events until ctx ends, then returns ctx's error.
func (r *Recorder) Run(ctx context.Context) error {
	bo := r.cfg.Backoff
	bo.Clock = r.clock
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-r.notify:
		}
		for {
			r.mu.Lock()
			if r.dropped > 0 {
				r.log.Warn("events dropped: the queue was full", "count", r.dropped)
				r.dropped = 0
			}
			if len(r.queue) == 0 {
				r.mu.Unlock()
				break
			}
			ev := r.queue[0]
			r.mu.Unlock()
			_, err := r.cfg.Client.Create(ctx, ev)
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if err != nil && retriable(err) {
				if !bo.BackOff(ctx, err) {
					return ctx.Err()
				}
				continue
			}
			bo.Reset()
			if err != nil {
				r.log.Warn("event refused by the server; dropped", "reason", ev.Reason, "pod", ev.Namespace+"/"+ev.InvolvedObject.Name, "err", err)
			}
			r.mu.Lock()
			if len(r.queue) > 0 && r.queue[0] == ev {
				r.queue = r.queue[1:]
			}
			r.mu.Unlock()
		}
	}
}

// retriable reports whether a failed request may work later: the server
// was unreachable, overloaded or failing, not refusing this request.
func retriable(err error) bool {
	var se *api.StatusError
	if !errors.As(err, &se) {
		return true // transport error: the server is away
	}
	c := se.Status.Code
	return c == 429 || c >= 500
}
