package config

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
)

// pod is a fixture: name n, UID "uid-"+n, image img.
func pod(n, img string) *api.Pod {
	return &api.Pod{
		ObjectMeta: api.ObjectMeta{Name: n, Namespace: "default", UID: "uid-" + n, ResourceVersion: "1"},
		Spec:       api.PodSpec{NodeName: "n1", Containers: []api.Container{{Name: "c", Image: img}}},
	}
}

func withRV(p *api.Pod, rv string) *api.Pod { p.ResourceVersion = rv; return p }

func withStatus(p *api.Pod, phase api.PodPhase) *api.Pod { p.Status.Phase = phase; return p }

func withLabel(p *api.Pod) *api.Pod { p.Labels = map[string]string{"a": "b"}; return p }

func deleting(p *api.Pod, grace int64) *api.Pod {
	p.DeletionTimestamp = api.NewTimePtr(time.Unix(1e9, 0))
	p.DeletionGracePeriodSeconds = &grace
	return p
}

// drain returns the updates waiting on m's channel as "OP source a,b".
func drain(m *Merger) []string {
	var out []string
	for {
		select {
		case u := <-m.Updates():
			var names []string
			for _, p := range u.Pods {
				names = append(names, p.Name)
			}
			out = append(out, fmt.Sprintf("%s %s %s", u.Op, u.Source, strings.Join(names, ",")))
		default:
			return out
		}
	}
}

type step struct {
	do   string // set, upsert, remove, restore
	src  string
	pods []*api.Pod
}

func TestMergerOps(t *testing.T) {
	tests := []struct {
		name  string
		steps []step
		want  []string // updates of the last step
	}{
		{"first set adds", []step{{"set", SourceAPI, []*api.Pod{pod("a", "x"), pod("b", "x")}}}, []string{"ADD api a,b"}},
		{"same set again is silent", []step{
			{"set", SourceAPI, []*api.Pod{pod("a", "x")}},
			{"set", SourceAPI, []*api.Pod{pod("a", "x")}}}, nil},
		{"resourceVersion alone is silent", []step{
			{"set", SourceAPI, []*api.Pod{pod("a", "x")}},
			{"upsert", SourceAPI, []*api.Pod{withRV(pod("a", "x"), "9")}}}, nil},
		{"spec change updates", []step{
			{"set", SourceAPI, []*api.Pod{pod("a", "x")}},
			{"upsert", SourceAPI, []*api.Pod{pod("a", "y")}}}, []string{"UPDATE api a"}},
		{"label change updates", []step{
			{"set", SourceAPI, []*api.Pod{pod("a", "x")}},
			{"set", SourceAPI, []*api.Pod{withLabel(pod("a", "x"))}}}, []string{"UPDATE api a"}},
		{"status change reconciles", []step{
			{"set", SourceAPI, []*api.Pod{pod("a", "x")}},
			{"upsert", SourceAPI, []*api.Pod{withStatus(pod("a", "x"), api.PodRunning)}}}, []string{"RECONCILE api a"}},
		{"deletionTimestamp deletes", []step{
			{"set", SourceAPI, []*api.Pod{pod("a", "x")}},
			{"upsert", SourceAPI, []*api.Pod{deleting(pod("a", "x"), 30)}}}, []string{"DELETE api a"}},
		{"shorter grace deletes again", []step{
			{"set", SourceAPI, []*api.Pod{pod("a", "x")}},
			{"upsert", SourceAPI, []*api.Pod{deleting(pod("a", "x"), 30)}},
			{"upsert", SourceAPI, []*api.Pod{deleting(pod("a", "x"), 5)}}}, []string{"DELETE api a"}},
		{"vanished from set removes", []step{
			{"set", SourceAPI, []*api.Pod{pod("a", "x"), pod("b", "x")}},
			{"set", SourceAPI, []*api.Pod{pod("b", "x")}}}, []string{"REMOVE api a"}},
		{"remove removes", []step{
			{"set", SourceAPI, []*api.Pod{pod("a", "x")}},
			{"remove", SourceAPI, []*api.Pod{pod("a", "x")}}}, []string{"REMOVE api a"}},
		{"remove of unknown is silent", []step{
			{"remove", SourceAPI, []*api.Pod{pod("a", "x")}}}, nil},
		{"one set, every op in order", []step{
			{"set", SourceAPI, []*api.Pod{pod("gone", "x"), pod("upd", "x"), pod("del", "x"), pod("rec", "x")}},
			{"set", SourceAPI, []*api.Pod{pod("new", "x"), pod("upd", "y"), deleting(pod("del", "x"), 1), withStatus(pod("rec", "x"), api.PodRunning)}}},
			[]string{"REMOVE api gone", "ADD api new", "UPDATE api upd", "DELETE api del", "RECONCILE api rec"}},
		{"sources are separate", []step{
			{"set", SourceAPI, []*api.Pod{pod("a", "x")}},
			{"set", SourceFile, []*api.Pod{pod("s", "x")}}}, []string{"ADD file s"}},
		{"restore sends RESTORE from checkpoint", []step{
			{"restore", "", []*api.Pod{pod("a", "x"), pod("b", "x")}}}, []string{"RESTORE checkpoint a,b"}},
		{"api state after restore: same is silent, gone removes, changed updates", []step{
			{"restore", "", []*api.Pod{pod("a", "x"), pod("b", "x"), pod("c", "x")}},
			{"set", SourceAPI, []*api.Pod{pod("a", "x"), pod("c", "y")}}}, []string{"REMOVE api b", "UPDATE api c"}},
		{"restore after the api spoke is ignored", []step{
			{"set", SourceAPI, []*api.Pod{pod("a", "x")}},
			{"restore", "", []*api.Pod{pod("b", "x")}}}, nil},
		{"pods without UID are ignored", []step{
			{"set", SourceAPI, []*api.Pod{{ObjectMeta: api.ObjectMeta{Name: "nouid"}}}}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := NewMerger(MergerConfig{Sources: []string{SourceAPI, SourceFile}})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			var got []string
			for _, s := range tt.steps {
				switch s.do {
				case "set":
					err = m.Set(ctx, s.src, s.pods)
				case "upsert":
					err = m.Upsert(ctx, s.src, s.pods...)
				case "remove":
					err = m.Remove(ctx, s.src, s.pods...)
				case "restore":
					err = m.Restore(ctx, s.pods)
				}
				if err != nil {
					t.Fatalf("%s: %v", s.do, err)
				}
				got = drain(m)
			}
			if strings.Join(got, "; ") != strings.Join(tt.want, "; ") {
				t.Errorf("updates = %q; want %q", got, tt.want)
			}
		})
	}
}

func TestMergerSeenAllSources(t *testing.T) {
	m, err := NewMerger(MergerConfig{Sources: []string{SourceAPI, SourceFile}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := m.Restore(ctx, []*api.Pod{pod("a", "x")}); err != nil {
		t.Fatal(err)
	}
	if err := m.Upsert(ctx, SourceAPI, pod("b", "x")); err != nil {
		t.Fatal(err)
	}
	if err := m.Set(ctx, SourceFile, nil); err != nil {
		t.Fatal(err)
	}
	if m.SeenAllSources() {
		t.Fatal("SeenAllSources() = true before the API source set its state; want false (restore and upsert do not count)")
	}
	if err := m.Set(ctx, SourceAPI, nil); err != nil {
		t.Fatal(err)
	}
	if !m.SeenAllSources() {
		t.Fatal("SeenAllSources() = false after every source set its state; want true")
	}
	select {
	case <-m.SeenAll():
	default:
		t.Fatal("SeenAll() not closed")
	}
}

func TestMergerSendsCopies(t *testing.T) {
	m, err := NewMerger(MergerConfig{Sources: []string{SourceAPI}})
	if err != nil {
		t.Fatal(err)
	}
	p := pod("a", "x")
	if err := m.Set(context.Background(), SourceAPI, []*api.Pod{p}); err != nil {
		t.Fatal(err)
	}
	u := <-m.Updates()
	if u.Pods[0] == p {
		t.Fatal("the merger sent the caller's pod; want a copy")
	}
	u.Pods[0].Spec.Containers[0].Image = "mutated"
	p.Spec.Containers[0].Image = "mutated too"
	if got := m.Pods(SourceAPI)[0].Spec.Containers[0].Image; got != "x" {
		t.Fatalf("stored image = %q after the sender and receiver mutated their pods; want x", got)
	}
}

func TestMergerRejectsUnknownSourceAndBadConfig(t *testing.T) {
	for _, cfg := range []MergerConfig{{}, {Sources: []string{""}}, {Sources: []string{SourceAPI, SourceAPI}}, {Sources: []string{SourceCheckpoint}}, {Sources: []string{SourceAPI}, Buffer: -1}} {
		if _, err := NewMerger(cfg); err == nil {
			t.Errorf("NewMerger(%+v) = nil error; want one", cfg)
		}
	}
	m, err := NewMerger(MergerConfig{Sources: []string{SourceAPI}})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Set(context.Background(), "nope", nil); err == nil {
		t.Error("Set on an unknown source = nil error; want one")
	}
	if err := m.Set(context.Background(), SourceCheckpoint, nil); err == nil {
		t.Error("Set on the checkpoint source = nil error; want one (use Restore)")
	}
}

type recordingCheckpoint struct{ saves [][]string }

func (r *recordingCheckpoint) Save(pods []*api.Pod) {
	var names []string
	for _, p := range pods {
		names = append(names, p.Name)
	}
	r.saves = append(r.saves, names)
}

func TestMergerCheckpointsAPISourceOnly(t *testing.T) {
	cp := &recordingCheckpoint{}
	m, err := NewMerger(MergerConfig{Sources: []string{SourceAPI, SourceFile}, Checkpoint: cp, Buffer: 10})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_ = m.Restore(ctx, []*api.Pod{pod("r", "x")})
	_ = m.Set(ctx, SourceFile, []*api.Pod{pod("s", "x")})
	_ = m.Set(ctx, SourceAPI, []*api.Pod{pod("b", "x"), pod("a", "x")})
	_ = m.Set(ctx, SourceAPI, []*api.Pod{pod("b", "x"), pod("a", "x")}) // no change: no save
	_ = m.Remove(ctx, SourceAPI, pod("a", "x"))
	got := fmt.Sprint(cp.saves)
	if want := "[[a b] [b]]"; got != want {
		t.Fatalf("checkpoint saves = %s; want %s", got, want)
	}
}

func TestMergerSendHonoursContext(t *testing.T) {
	m, err := NewMerger(MergerConfig{Sources: []string{SourceAPI}, Buffer: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := m.Set(ctx, SourceAPI, []*api.Pod{pod("a", "x")}); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := m.Upsert(ctx, SourceAPI, pod("b", "x")); err == nil {
		t.Fatal("Upsert with a full channel and a cancelled context = nil error; want the context's")
	}
}
