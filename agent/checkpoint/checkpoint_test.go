package checkpoint

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/skiffhq/skiff/agent/config"
	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/clock"
)

var quiet = slog.New(slog.DiscardHandler)

func pod(name string) *api.Pod {
	return &api.Pod{ObjectMeta: api.ObjectMeta{Name: name, Namespace: "default", UID: "uid-" + name},
		Spec: api.PodSpec{NodeName: "n1", Containers: []api.Container{{Name: "c", Image: "busybox"}}}}
}

func newStore(t *testing.T, dir string, clk clock.Clock) *Store {
	t.Helper()
	s, err := New(Config{Dir: dir, Clock: clk, Debounce: time.Second, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSaveIsDebouncedAndRoundTrips(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "agent", "checkpoint")
	clk := clock.NewFake(time.Unix(1e9, 0))
	s := newStore(t, dir, clk)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()

	s.Save([]*api.Pod{pod("a")})
	s.Save([]*api.Pod{pod("a"), pod("b")})
	clk.BlockUntil(1) // Run waits out the debounce
	if _, err := os.Stat(s.Path()); !os.IsNotExist(err) {
		t.Fatalf("checkpoint written before the debounce passed (stat: %v)", err)
	}
	clk.Advance(time.Second)
	deadline := time.Now().Add(20 * time.Second)
	for {
		if got := newStore(t, dir, clk).Load(); len(got) == 2 {
			if got[0].Name != "a" || got[1].Name != "b" || got[1].UID != "uid-b" || got[0].Kind != "Pod" {
				t.Fatalf("loaded %+v; want pods a and b", got)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("checkpoint not written within 20s of the debounce")
		}
		time.Sleep(5 * time.Millisecond) // the write is real file I/O
	}
	info, err := os.Stat(s.Path())
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("checkpoint mode = %v (%v); want 0600", info.Mode(), err)
	}

	// A save pending at shutdown is written by Run on its way out.
	s.Save(nil)
	cancel()
	<-done
	if got := newStore(t, dir, clk).Load(); len(got) != 0 {
		t.Fatalf("after an empty save at shutdown, loaded %d pods; want 0", len(got))
	}
}

func TestLoadIgnoresMissingAndCorruptFiles(t *testing.T) {
	dir := t.TempDir()
	s := newStore(t, dir, nil)
	if got := s.Load(); got != nil {
		t.Fatalf("Load of a missing file = %v; want nil", got)
	}
	for _, content := range []string{"{not json", `{"version":99,"pods":[]}`, `[1,2]`, ""} {
		if err := os.WriteFile(s.Path(), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if got := s.Load(); len(got) != 0 {
			t.Errorf("Load(%q) = %d pods; want none", content, len(got))
		}
	}
	if err := os.WriteFile(s.Path(), []byte(`{"version":1,"pods":[{"metadata":{"name":"nouid"}},null,{"metadata":{"name":"ok","uid":"u1"}}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := s.Load(); len(got) != 1 || got[0].Name != "ok" {
		t.Fatalf("Load kept %d pods; want only the one with a name and UID", len(got))
	}
}

// TestRestoreThroughMerger: the merger checkpoints the API source; a new
// agent loads the checkpoint and the merger sends it as RESTORE before
// the server has answered; the server's first list then reconciles it.
func TestRestoreThroughMerger(t *testing.T) {
	dir := t.TempDir()
	s := newStore(t, dir, nil)
	m1, err := config.NewMerger(config.MergerConfig{Sources: []string{config.SourceAPI}, Checkpoint: s, Buffer: 10})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := m1.Set(ctx, config.SourceAPI, []*api.Pod{pod("a"), pod("b")}); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}

	// The agent restarts.
	m2, err := config.NewMerger(config.MergerConfig{Sources: []string{config.SourceAPI}, Buffer: 10})
	if err != nil {
		t.Fatal(err)
	}
	if err := m2.Restore(ctx, newStore(t, dir, nil).Load()); err != nil {
		t.Fatal(err)
	}
	u := <-m2.Updates()
	if u.Op != config.RESTORE || u.Source != config.SourceCheckpoint || len(u.Pods) != 2 || u.Pods[0].Name != "a" {
		t.Fatalf("first update = %s from %s with %d pods; want RESTORE from checkpoint of a and b", u.Op, u.Source, len(u.Pods))
	}
	if m2.SeenAllSources() {
		t.Fatal("a restore counted as the API source's state")
	}
	if err := m2.Set(ctx, config.SourceAPI, []*api.Pod{pod("a")}); err != nil {
		t.Fatal(err)
	}
	u = <-m2.Updates()
	if u.Op != config.REMOVE || len(u.Pods) != 1 || u.Pods[0].Name != "b" {
		t.Fatalf("after the server's list: %s of %d pods; want REMOVE b only", u.Op, len(u.Pods))
	}
	select {
	case u := <-m2.Updates():
		t.Fatalf("unexpected %s update: the restored pod a is unchanged", u.Op)
	default:
	}
}
