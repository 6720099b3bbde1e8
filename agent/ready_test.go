package agent

import (
	"errors"
	"testing"

	"github.com/skiffhq/skiff/internal/peerfeed"
)

type fakeNetwork struct {
	ready error
	sets  int
}

func (f *fakeNetwork) SetPeers([]peerfeed.Peer) error {
	f.sets++
	if f.sets == 2 {
		f.ready = nil // the podCIDR arrived with the second set
	}
	return nil
}

// TestReadyNotifierCallsOnChange: the status write is asked for when the
// network's readiness is first known and whenever it changes, not on
// every Node event.
func TestReadyNotifierCallsOnChange(t *testing.T) {
	nw := &fakeNetwork{ready: errors.New("no podCIDR yet")}
	calls := 0
	r := &readyNotifier{sink: nw, ready: func() error { return nw.ready }, changed: func() { calls++ }}
	want := []int{1, 2, 2, 2}
	for i, w := range want {
		if err := r.SetPeers(nil); err != nil {
			t.Fatal(err)
		}
		if calls != w {
			t.Fatalf("after SetPeers #%d: changed called %d times; want %d", i+1, calls, w)
		}
	}
	nw.ready = errors.New("bridge gone")
	if err := r.SetPeers(nil); err != nil || calls != 3 {
		t.Fatalf("readiness lost: changed called %d times (err %v); want 3", calls, err)
	}
}
