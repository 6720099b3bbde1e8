package soak

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/client"
	"github.com/skiffhq/skiff/internal/testenv"
	"github.com/skiffhq/skiff/test/faults/local"
)

// churn creates bare pods at rate per second (the scheduler places
// them) and deletes each lifetime after its creation.
type churn struct {
	c        *local.Cluster
	rate     float64
	lifetime time.Duration

	mu                                  sync.Mutex
	created, deleted, failedN, skippedN int
	next                                int
	live                                []livePod
}

type livePod struct {
	name string
	at   time.Time
}

func (ch *churn) counts() (created, deleted int) {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	return ch.created, ch.deleted
}

func (ch *churn) failed() int {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	return ch.failedN
}

func (ch *churn) skipped() int {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	return ch.skippedN
}

// run churns until ctx ends. Deletes keep pace (up to two per tick);
// creates stop while twice the expected number of pods are live.
func (ch *churn) run(ctx context.Context) {
	pods, _ := api.LookupResource("pods")
	tick := time.NewTicker(time.Duration(float64(time.Second) / ch.rate))
	defer tick.Stop()
	limit := int(2 * ch.rate * ch.lifetime.Seconds())
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		for n := 0; n < 2 && len(ch.live) > 0 && time.Since(ch.live[0].at) >= ch.lifetime; n++ {
			p := ch.live[0]
			ch.live = ch.live[1:]
			err := ch.op(ctx, func(ctx context.Context) error {
				return ch.c.Admin.Delete(ctx, pods, "default", p.name, client.DeleteOptions{})
			})
			ch.mu.Lock()
			if err == nil {
				ch.deleted++
			}
			ch.mu.Unlock()
		}
		if len(ch.live) >= limit {
			ch.mu.Lock()
			ch.skippedN++
			ch.mu.Unlock()
			continue
		}
		name := fmt.Sprintf("churn-%d", ch.next)
		ch.next++
		err := ch.op(ctx, func(ctx context.Context) error {
			_, err := ch.c.Admin.Create(ctx, churnPod(name))
			return err
		})
		if err == nil {
			ch.live = append(ch.live, livePod{name, time.Now()})
			ch.mu.Lock()
			ch.created++
			ch.mu.Unlock()
		}
	}
}

// op runs one request with a 10 s bound, counting a failure unless the
// run is over.
func (ch *churn) op(ctx context.Context, f func(context.Context) error) error {
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	err := f(rctx)
	if err != nil && ctx.Err() == nil {
		ch.mu.Lock()
		ch.failedN++
		ch.mu.Unlock()
	}
	return err
}

// deleteAll deletes every churn pod the API still has.
func (ch *churn) deleteAll(ctx context.Context, t *testing.T) {
	pods, _ := api.LookupResource("pods")
	objs, _, err := ch.c.Admin.List(ctx, pods, "default", client.ListOptions{})
	if err != nil {
		t.Errorf("list pods: %v", err)
		return
	}
	for _, o := range objs {
		p := o.(*api.Pod)
		if strings.HasPrefix(p.Name, "churn-") && p.DeletionTimestamp == nil {
			if err := ch.c.Admin.Delete(ctx, pods, "default", p.Name, client.DeleteOptions{}); err != nil {
				t.Errorf("delete %s: %v", p.Name, err)
			}
		}
	}
}

func churnPod(name string) *api.Pod {
	p := &api.Pod{}
	p.APIVersion, p.Kind = "v1", "Pod"
	p.Name, p.Namespace = name, "default"
	p.Labels = map[string]string{"app": "churn"}
	grace := int64(0)
	p.Spec.TerminationGracePeriodSeconds = &grace
	p.Spec.Containers = []api.Container{{Name: "main", Image: testenv.BusyboxRef, ImagePullPolicy: "Never",
		Command: []string{"sleep", "3600"}}}
	return p
}
