package serverload

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const cmPath = "/api/v1/namespaces/default/configmaps"

// acked is what the server acknowledged for one configmap: its
// resourceVersion and the sequence number written into data.seq.
type acked struct {
	rv  int64
	seq int
}

// configMapBody is a configmap whose data carries the writer's sequence
// number (and, for updates, the resourceVersion precondition).
func configMapBody(name string, seq int, rv int64) []byte {
	rvField := ""
	if rv > 0 {
		rvField = fmt.Sprintf(`,"resourceVersion":"%d"`, rv)
	}
	return fmt.Appendf(nil, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q%s},"data":{"seq":"%d","pad":"0123456789abcdef0123456789abcdef"}}`, name, rvField, seq)
}

// storedConfigMap is the part of a stored configmap the checks read.
type storedConfigMap struct {
	Metadata struct {
		Name            string `json:"name"`
		ResourceVersion string `json:"resourceVersion"`
	} `json:"metadata"`
	Data map[string]string `json:"data"`
}

func (c storedConfigMap) rv() int64 {
	n, _ := strconv.ParseInt(c.Metadata.ResourceVersion, 10, 64)
	return n
}

// loadWriter creates configmaps named <prefix>-<n> and, every third
// write, updates one it created before (with its resourceVersion as
// precondition), recording every 201/200 in acks. It stops at its first
// transport error, which is expected only once killed is set.
type loadWriter struct {
	p      *serverProc
	client *http.Client
	prefix string
	acks   map[string]acked // owned by the writer until run returns
	order  []string
	err    error // an unexpected answer or error; nil when all was well
}

func (w *loadWriter) run(ctx context.Context, killed *atomic.Bool, total *atomic.Int64) {
	for n := 0; ctx.Err() == nil; n++ {
		name := fmt.Sprintf("%s-%d", w.prefix, n)
		method, path, seq, rv, want := http.MethodPost, cmPath, 1, int64(0), http.StatusCreated
		if n%3 == 2 && len(w.order) > 0 {
			name = w.order[n%len(w.order)]
			a := w.acks[name]
			method, path, seq, rv, want = http.MethodPut, cmPath+"/"+name, a.seq+1, a.rv, http.StatusOK
		}
		code, body, err := w.p.do(ctx, w.client, method, path, "application/json", configMapBody(name, seq, rv))
		if err != nil {
			if !killed.Load() && ctx.Err() == nil {
				w.err = fmt.Errorf("%s %s before the kill: %w", method, name, err)
			}
			return
		}
		if code != want {
			w.err = fmt.Errorf("%s %s = %d %s; want %d", method, name, code, body, want)
			return
		}
		var got storedConfigMap
		if err := json.Unmarshal(body, &got); err != nil || got.rv() <= rv {
			w.err = fmt.Errorf("%s %s answered %s (%v); want a newer resourceVersion than %d", method, name, body, err, rv)
			return
		}
		if method == http.MethodPost {
			w.order = append(w.order, name)
		}
		w.acks[name] = acked{rv: got.rv(), seq: seq}
		total.Add(1)
	}
}

// TestKill9UnderHTTPSWriteLoadRealBinary runs 16 writers against the real
// server binary over HTTPS, SIGKILLs it at three different moments and
// restarts it on the same data dir each time: every write it
// acknowledged is there with at least the acknowledged resourceVersion
// and content, lists work, and revisions keep increasing.
func TestKill9UnderHTTPSWriteLoadRealBinary(t *testing.T) {
	const writers = 16
	dataDir := t.TempDir()
	all := map[string]acked{} // every acknowledged write of every round
	var maxRV int64
	// Kill after this many acknowledged writes in the round: early, with
	// the first pages of the database being written, and later with a
	// larger WAL. 16 writers keep requests in flight at every kill.
	kills := []struct{ after int64 }{{150}, {1500}, {5000}}

	p := startServer(t, dataDir)
	for round, k := range kills {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		var killed atomic.Bool
		var total atomic.Int64
		client := p.client(writers)
		ws := make([]*loadWriter, writers)
		var wg sync.WaitGroup
		for i := range ws {
			ws[i] = &loadWriter{p: p, client: client, prefix: fmt.Sprintf("r%d-w%d", round, i), acks: map[string]acked{}}
			wg.Add(1)
			go func() { defer wg.Done(); ws[i].run(ctx, &killed, &total) }()
		}
		reached := waitFor(ctx, func() bool { return total.Load() >= k.after })
		killed.Store(true)
		p.kill()
		wg.Wait()
		cancel()
		client.CloseIdleConnections()
		if !reached {
			t.Fatalf("round %d: only %d writes acknowledged within 60s; want %d\n%s", round, total.Load(), k.after, p.logTail())
		}
		for _, w := range ws {
			if w.err != nil {
				t.Fatalf("round %d: %v", round, w.err)
			}
			for name, a := range w.acks {
				all[name] = a
				maxRV = max(maxRV, a.rv)
			}
		}
		t.Logf("round %d: SIGKILL after %d acknowledged writes (%d in all)", round, total.Load(), len(all))

		p = startServer(t, dataDir)
		maxRV = checkAcknowledged(t, p, all, maxRV)
	}
	p.stop()
}

// waitFor polls cond every millisecond until it holds or ctx ends.
func waitFor(ctx context.Context, cond func() bool) bool {
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
	}
	return true
}

// checkAcknowledged lists the configmaps of the restarted server and
// checks every acknowledged write against it, then makes one more write
// and checks its resourceVersion is above everything seen. It returns
// that write's resourceVersion.
func checkAcknowledged(t *testing.T, p *serverProc, all map[string]acked, maxRV int64) int64 {
	t.Helper()
	c := p.client(1)
	defer c.CloseIdleConnections()
	var list struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
		Items []storedConfigMap `json:"items"`
	}
	if err := json.Unmarshal(p.mustDo(c, http.MethodGet, cmPath, "", nil, http.StatusOK), &list); err != nil {
		t.Fatal(err)
	}
	listRV, err := strconv.ParseInt(list.Metadata.ResourceVersion, 10, 64)
	if err != nil || listRV < maxRV {
		t.Fatalf("list resourceVersion %q; want at least %d, the newest acknowledged", list.Metadata.ResourceVersion, maxRV)
	}
	stored := make(map[string]storedConfigMap, len(list.Items))
	for _, it := range list.Items {
		if _, dup := stored[it.Metadata.Name]; dup {
			t.Fatalf("list holds %s twice", it.Metadata.Name)
		}
		if it.rv() <= 0 || it.rv() > listRV {
			t.Fatalf("%s has resourceVersion %q; want 1..%d", it.Metadata.Name, it.Metadata.ResourceVersion, listRV)
		}
		stored[it.Metadata.Name] = it
	}
	var lost []string
	for name, a := range all {
		got, ok := stored[name]
		if !ok {
			lost = append(lost, name)
			continue
		}
		seq, err := strconv.Atoi(got.Data["seq"])
		switch {
		case err != nil:
			t.Errorf("%s: data.seq %q is not a number", name, got.Data["seq"])
		case got.rv() < a.rv || seq < a.seq:
			t.Errorf("%s: stored resourceVersion %d seq %d; acknowledged %d seq %d (an acknowledged write was lost)", name, got.rv(), seq, a.rv, a.seq)
		case (got.rv() == a.rv) != (seq == a.seq):
			t.Errorf("%s: stored resourceVersion %d seq %d; acknowledged %d seq %d (same version, different content)", name, got.rv(), seq, a.rv, a.seq)
		}
	}
	if len(lost) > 0 {
		t.Fatalf("%d acknowledged creates missing after restart, e.g. %v", len(lost), lost[:min(5, len(lost))])
	}
	if t.Failed() {
		t.FailNow()
	}
	// Revisions go on from where they were: never reused after a crash.
	b := p.mustDo(c, http.MethodPost, cmPath, "application/json", configMapBody(fmt.Sprintf("after-%d", listRV), 1, 0), http.StatusCreated)
	var cm storedConfigMap
	if err := json.Unmarshal(b, &cm); err != nil || cm.rv() <= listRV {
		t.Fatalf("first write after restart got resourceVersion %q (%v); want above %d", cm.Metadata.ResourceVersion, err, listRV)
	}
	return cm.rv()
}
