package controllers

import (
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/clock"
)

// TestQueueMetrics: adds count keys newly queued, wait is the fake time
// between queueing and a worker taking the key, retries count failures.
func TestQueueMetrics(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	q := NewQueue(clk)
	q.Add("a")
	q.Add("a") // already queued: not a second add
	q.Add("b")
	clk.Advance(2 * time.Second)
	k, ok := q.TryGet()
	if !ok || k != "a" {
		t.Fatalf("TryGet = %q, %v; want a", k, ok)
	}
	m := q.metrics("test")
	if m.Adds != 2 || m.Depth != 1 || m.Wait.Count != 1 || m.Wait.Sum != 2 {
		t.Errorf("metrics = adds %d, depth %d, wait count %d sum %g; want 2, 1, 1, 2", m.Adds, m.Depth, m.Wait.Count, m.Wait.Sum)
	}
	q.AddRateLimited("a")
	q.Done("a")
	if m := q.metrics("test"); m.Retries != 1 {
		t.Errorf("retries = %d; want 1", m.Retries)
	}
}
