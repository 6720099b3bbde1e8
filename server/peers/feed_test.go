package peers

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/internal/deepcopy"
	"github.com/skiffhq/skiff/internal/peerfeed"
	"github.com/skiffhq/skiff/storage"
)

func openStore(t *testing.T, path string) *storage.Store {
	t.Helper()
	if path == "" {
		path = filepath.Join(t.TempDir(), "state.db")
	}
	st, err := storage.Open(context.Background(), storage.Options{Path: path, CompactInterval: -1, CheckpointInterval: -1, ReserveBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func node(name, cidr, ip string) *api.Node {
	n := &api.Node{TypeMeta: api.TypeMeta{APIVersion: "v1", Kind: "Node"}, ObjectMeta: api.ObjectMeta{Name: name}}
	n.Spec.PodCIDR = cidr
	if ip != "" {
		n.Status.Addresses = []api.NodeAddress{{Type: api.NodeHostName, Address: name}, {Type: api.NodeInternalIP, Address: ip}}
	}
	return n
}

// startFeed runs f's follower (not its ticker: the test seals) until the
// test ends, and waits until it has followed the store's revision.
func startFeed(t *testing.T, st *storage.Store, keep int) *Feed {
	t.Helper()
	f := New(Config{Store: st, Keep: keep, Clock: clock.NewFake(time.Unix(1e9, 0))})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { f.follow(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	caughtUp(t, f, st)
	f.seal() // ready
	return f
}

// caughtUp waits until f has followed every change in st.
func caughtUp(t *testing.T, f *Feed, st *storage.Store) {
	t.Helper()
	want := st.Revision()
	deadline := time.Now().Add(10 * time.Second)
	for {
		f.mu.Lock()
		rev, listed := f.rev, f.haveList
		f.mu.Unlock()
		if listed && rev >= want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("feed at revision %d; the store at %d", rev, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func decodeLines(t *testing.T, lines [][]byte) []peerfeed.Batch {
	t.Helper()
	var out []peerfeed.Batch
	for _, l := range lines {
		var b peerfeed.Batch
		if err := json.Unmarshal(l, &b); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		out = append(out, b)
	}
	return out
}

func create(t *testing.T, st *storage.Store, n *api.Node) {
	t.Helper()
	if err := st.Create(context.Background(), n); err != nil {
		t.Fatal(err)
	}
}

func update(t *testing.T, st *storage.Store, name string, change func(*api.Node)) {
	t.Helper()
	obj, err := st.Get(context.Background(), "nodes", "", name)
	if err != nil {
		t.Fatal(err)
	}
	n := deepcopy.Of(obj.(*api.Node))
	change(n)
	if err := st.Update(context.Background(), n); err != nil {
		t.Fatal(err)
	}
}

// TestFeedSealsOnlyPeerChanges: fifty status writes that change no
// Peer make no batch; the one that changes a podCIDR, among them, makes
// one batch holding that node alone.
func TestFeedSealsOnlyPeerChanges(t *testing.T) {
	st := openStore(t, "")
	for i := range 3 {
		create(t, st, node(fmt.Sprintf("n%d", i), fmt.Sprintf("10.42.%d.0/24", i), fmt.Sprintf("192.168.0.%d", i+1)))
	}
	f := startFeed(t, st, 0)
	for i := range 50 {
		update(t, st, "n0", func(n *api.Node) {
			n.Status.Conditions = []api.NodeCondition{{Type: "Ready", Status: "True", Reason: fmt.Sprint("beat", i)}}
		})
		if i == 25 {
			update(t, st, "n2", func(n *api.Node) { n.Spec.PodCIDR = "10.42.9.0/24" })
		}
	}
	caughtUp(t, f, st)
	f.seal()
	f.mu.Lock()
	lines, _, _ := f.afterLocked(f.base)
	f.mu.Unlock()
	got := decodeLines(t, lines)
	if len(got) != 1 || len(got[0].Peers) != 1 || got[0].Peers[0] != (peerfeed.Peer{Name: "n2", PodCIDR: "10.42.9.0/24", IP: "192.168.0.3"}) {
		t.Fatalf("batches %+v; want one, holding n2 with its new podCIDR", got)
	}
}

// TestFeedStreamStarts: where a stream starts. From a revision the kept
// batches cover: the batches after it. From one older than them: the
// whole set. From an unknown revision with the server's hash: an empty
// batch. A new Feed on the same store (a restarted server) answers a
// resuming agent whose set is current with an empty batch, not the
// whole set.
func TestFeedStreamStarts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	st := openStore(t, path)
	create(t, st, node("n0", "10.42.0.0/24", "192.168.0.1"))
	f := startFeed(t, st, 2) // keep two batches
	var agent peerfeed.Set
	start := func(since int64, hash string) []peerfeed.Batch {
		f.mu.Lock()
		defer f.mu.Unlock()
		lines, _, _ := f.startLocked(since, hash)
		return decodeLines(t, lines)
	}
	full := start(-1, "")
	if len(full) != 1 || !full[0].Full || len(full[0].Peers) != 1 {
		t.Fatalf("a new stream got %+v; want the whole set", full)
	}
	if err := agent.Apply(full[0]); err != nil {
		t.Fatal(err)
	}
	firstRev := full[0].Revision
	var revs []int64
	for i := 1; i <= 3; i++ {
		create(t, st, node(fmt.Sprintf("n%d", i), fmt.Sprintf("10.42.%d.0/24", i), ""))
		caughtUp(t, f, st)
		f.seal()
		revs = append(revs, f.sealRev)
	}
	if got := start(revs[1], ""); len(got) != 1 || fmt.Sprint(peerNames(got[0].Peers)) != "[n3]" {
		t.Errorf("from the second batch's revision: %+v; want the third batch alone", got)
	}
	if got := start(firstRev, ""); len(got) != 1 || !got[0].Full || len(got[0].Peers) != 4 {
		t.Errorf("from before the kept batches: %+v; want the whole set of 4", got)
	}
	// The agent catches up with the whole set.
	agent = peerfeed.Set{}
	if err := agent.Apply(start(firstRev, "")[0]); err != nil || agent.Len() != 4 {
		t.Fatalf("the agent's set holds %d (%v); want 4", agent.Len(), err)
	}
	if got := start(999999, agent.Hash()); len(got) != 1 || got[0].Full || len(got[0].Peers) != 0 || got[0].Hash != agent.Hash() {
		t.Errorf("an unknown revision with the server's hash: %+v; want an empty batch", got)
	}

	// The server restarts: a new Feed on the same store.
	g := startFeed(t, st, 2)
	g.mu.Lock()
	lines, _, _ := g.startLocked(revs[1], agent.Hash())
	g.mu.Unlock()
	if got := decodeLines(t, lines); len(got) != 1 || got[0].Full || len(got[0].Peers) != 0 {
		t.Errorf("after a restart, an agent with the current set got %+v; want an empty batch", got)
	}
	g.mu.Lock()
	lines, _, _ = g.startLocked(firstRev, "stale")
	g.mu.Unlock()
	if got := decodeLines(t, lines); len(got) != 1 || !got[0].Full {
		t.Errorf("after a restart, an agent with another set got %+v; want the whole set", got)
	}
}

func peerNames(ps []peerfeed.Peer) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Name)
	}
	return out
}

// TestFullSetEncodedOncePerSeal: the whole set's line is encoded once
// between two seals that carry changes, however many streams ask for it
// and however many node writes move the revision; a stream handed a
// line older than a peer change gets that change in the next batch, and
// its set then hashes as the server's.
func TestFullSetEncodedOncePerSeal(t *testing.T) {
	st := openStore(t, "")
	for i := range 3 {
		create(t, st, node(fmt.Sprintf("n%d", i), fmt.Sprintf("10.42.%d.0/24", i), fmt.Sprintf("192.168.0.%d", i+1)))
	}
	f := startFeed(t, st, 0)
	beat := func(i int) {
		update(t, st, "n0", func(n *api.Node) {
			n.Status.Conditions = []api.NodeCondition{{Type: "Ready", Status: "True", Reason: fmt.Sprint("beat", i)}}
		})
		caughtUp(t, f, st)
	}
	builds := f.FullEncodes
	// New streams between node status writes: one encoding.
	var first []peerfeed.Batch
	for i := range 5 {
		beat(i)
		lines, _, _ := f.NewReader(-1, "").Next()
		got := decodeLines(t, lines)
		if len(got) != 1 || !got[0].Full || len(got[0].Peers) != 3 {
			t.Fatalf("stream %d got %+v; want the whole set of 3", i, got)
		}
		if first == nil {
			first = got
		}
	}
	if n := builds(); n != 1 {
		t.Fatalf("the whole set was encoded %d times for 5 streams between status writes; want once", n)
	}

	// A peer changes before the next seal: a new stream still gets the
	// line encoded before it, and the seal's batch brings the change.
	update(t, st, "n2", func(n *api.Node) { n.Spec.PodCIDR = "10.42.9.0/24" })
	caughtUp(t, f, st)
	r := f.NewReader(-1, "")
	lines, _, wake := r.Next()
	var agent peerfeed.Set
	if err := agent.Apply(decodeLines(t, lines)[0]); err != nil {
		t.Fatal(err)
	}
	if n := builds(); n != 1 {
		t.Fatalf("encoded %d times before the seal; want once", n)
	}
	f.seal()
	<-wake
	lines, _, _ = r.Next()
	for _, b := range decodeLines(t, lines) {
		if err := agent.Apply(b); err != nil {
			t.Fatal(err)
		}
	}
	if p, _ := agent.Get("n2"); p.PodCIDR != "10.42.9.0/24" || agent.Hash() != f.sealSum {
		t.Fatalf("after the seal the stream's set has n2 %+v, hash %s; want the new podCIDR and the server's hash %s", p, agent.Hash(), f.sealSum)
	}
	// After the seal, the next stream's line is encoded again, with the change.
	lines, _, _ = f.NewReader(-1, "").Next()
	got := decodeLines(t, lines)
	if n := builds(); n != 2 || len(got) != 1 || got[0].Hash != f.sealSum {
		t.Fatalf("after the seal: %d encodings, line %+v; want 2, hashing as the seal %s", n, got, f.sealSum)
	}
}
