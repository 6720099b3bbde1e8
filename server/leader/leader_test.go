package leader

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/storage"
)

// fakeStore answers AcquireLease from a script the test sets.
type fakeStore struct {
	mu       sync.Mutex
	epoch    int64
	held     bool
	err      error
	calls    int
	released []int64
}

func (f *fakeStore) AcquireLease(context.Context, string, string, time.Duration) (int64, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	return f.epoch, f.held, f.err
}

func (f *fakeStore) ReleaseLease(_ context.Context, _, _ string, epoch int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.released = append(f.released, epoch)
	return nil
}

func (f *fakeStore) set(epoch int64, held bool, err error) {
	f.mu.Lock()
	f.epoch, f.held, f.err = epoch, held, err
	f.mu.Unlock()
}

// terms records the lead calls: their fences and whether they ended.
type terms struct {
	mu     sync.Mutex
	fences []storage.Fence
	ended  int
	start  chan struct{}
	end    chan struct{}
}

func (tr *terms) lead(ctx context.Context) {
	tr.mu.Lock()
	tr.fences = append(tr.fences, fenceFrom(ctx))
	tr.mu.Unlock()
	tr.start <- struct{}{}
	<-ctx.Done()
	tr.mu.Lock()
	tr.ended++
	tr.mu.Unlock()
	tr.end <- struct{}{}
}

// fenceFrom reads the fence writes under ctx carry.
func fenceFrom(ctx context.Context) storage.Fence {
	f, _ := storage.FenceOf(ctx)
	return f
}

func wait(t *testing.T, ch chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatalf("no %s within 5s", what)
	}
}

func TestRunTermsFollowTheLease(t *testing.T) {
	fc := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	st := &fakeStore{}
	st.set(1, true, nil)
	tr := &terms{start: make(chan struct{}, 1), end: make(chan struct{}, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Config{Store: st, Holder: "a", Clock: fc}, tr.lead)
	}()
	wait(t, tr.start, "first term")
	if got := tr.fences[0]; got != (storage.Fence{Lease: LeaseName, Epoch: 1}) {
		t.Fatalf("term 1 fence = %+v; want %s epoch 1", got, LeaseName)
	}
	// Renewals at the same epoch keep the term.
	fc.BlockUntil(1)
	fc.Advance(DefaultRenewInterval)
	fc.BlockUntil(1)
	fc.Advance(DefaultRenewInterval)
	fc.BlockUntil(1)
	if tr.ended != 0 {
		t.Fatalf("term ended during renewals")
	}
	// Another server takes the lease: the term ends.
	st.set(2, false, nil)
	fc.Advance(DefaultRenewInterval)
	wait(t, tr.end, "end of term 1")
	// It comes back at a new epoch: a new term with the new fence.
	fc.BlockUntil(1)
	st.set(3, true, nil)
	fc.Advance(DefaultRetryInterval)
	wait(t, tr.start, "second term")
	if got := tr.fences[1].Epoch; got != 3 {
		t.Fatalf("term 2 epoch = %d; want 3", got)
	}
	// Renewal errors: the term survives until the lease could have
	// lapsed (TTL after the last successful renewal started), then ends.
	fc.BlockUntil(1)
	st.set(0, false, errors.New("datastore down"))
	fc.Advance(DefaultRenewInterval) // 2s after the renewal: still inside the 3s TTL
	fc.BlockUntil(1)
	select {
	case <-tr.end:
		t.Fatal("term ended 2s after the last renewal; want it kept until the TTL")
	default:
	}
	fc.Advance(DefaultRenewInterval) // 4s: past the TTL
	wait(t, tr.end, "end of term 2 after failed renewals")
	// Shutdown while leading releases the lease.
	fc.BlockUntil(1)
	st.set(4, true, nil)
	fc.Advance(DefaultRetryInterval)
	wait(t, tr.start, "third term")
	cancel()
	wait(t, tr.end, "end of term 3 at shutdown")
	if err := <-done; err != nil {
		t.Fatalf("Run = %v; want nil", err)
	}
	if len(st.released) != 1 || st.released[0] != 4 {
		t.Errorf("released %v; want [4]", st.released)
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"ok", Config{Store: &fakeStore{}, Holder: "a"}, true},
		{"no store", Config{Holder: "a"}, false},
		{"no holder", Config{Store: &fakeStore{}}, false},
		{"renew not shorter than ttl", Config{Store: &fakeStore{}, Holder: "a", TTL: time.Second, RenewInterval: time.Second}, false},
		{"negative", Config{Store: &fakeStore{}, Holder: "a", TTL: -1}, false},
	}
	for _, tt := range tests {
		if err := tt.cfg.Validate(); (err == nil) != tt.ok {
			t.Errorf("Validate(%s) = %v; want ok=%v", tt.name, err, tt.ok)
		}
	}
}
