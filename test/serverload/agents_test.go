package serverload

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Benchmark sizes; see doc.go for the command that runs them.
var (
	flagDuration   = flag.Duration("serverload.duration", 10*time.Second, "how long BenchmarkCreatesHTTPS creates")
	flagClients    = flag.Int("serverload.clients", 50, "concurrent HTTPS clients of BenchmarkCreatesHTTPS")
	flagAgents     = flag.Int("serverload.agents", 1000, "simulated agents (nodes) of BenchmarkAssignmentLatency and BenchmarkServerResources")
	flagPods       = flag.Int("serverload.pods", 3000, "pods bound per iteration of BenchmarkAssignmentLatency")
	flagBindRate   = flag.Int("serverload.bindrate", 200, "pods bound per second in BenchmarkAssignmentLatency")
	flagHeartbeat  = flag.Duration("serverload.heartbeat", 10*time.Second, "node heartbeat period of BenchmarkServerResources")
	flagWindow     = flag.Duration("serverload.window", 60*time.Second, "measured window of BenchmarkServerResources/nodes")
	flagIdleWindow = flag.Duration("serverload.idlewindow", 20*time.Second, "measured window of BenchmarkServerResources/idle")
	flagSettle     = flag.Duration("serverload.settle", 5*time.Second, "wait after start-up before measuring an idle server")
	flagWatch      = flag.Bool("serverload.watch", true, "simulated nodes of BenchmarkServerResources also hold their assignment watch")
	flagPatchBeats = flag.Bool("serverload.patchbeats", false, "BenchmarkServerResources heartbeats with a status merge patch instead of the agent's lightweight call")
)

func nodeName(i int) string { return fmt.Sprintf("node-%04d", i) }

func nodeBody(name string) []byte {
	return fmt.Appendf(nil, `{"apiVersion":"v1","kind":"Node","metadata":{"name":%q,"labels":{"kubernetes.io/hostname":%q,"kubernetes.io/os":"linux","kubernetes.io/arch":"amd64"}},`+
		`"status":{"capacity":{"cpu":"4","memory":"8Gi","pods":"110"},"allocatable":{"cpu":"3800m","memory":"7Gi","pods":"110"},`+
		`"nodeInfo":{"kernelVersion":"6.1.0","osImage":"Debian GNU/Linux 12","containerRuntimeVersion":"containerd://1.7.24","kubeletVersion":"skiff","operatingSystem":"linux","architecture":"amd64"}}}`, name, name)
}

// heartbeatBody is a merge patch of the Ready condition, as an agent's
// status update sends it.
func heartbeatBody(now, since time.Time) []byte {
	return fmt.Appendf(nil, `{"status":{"conditions":[{"type":"Ready","status":"True","lastHeartbeatTime":%q,"lastTransitionTime":%q,"reason":"KubeletReady","message":"skiff agent is posting ready status"}]}}`,
		now.UTC().Format(time.RFC3339), since.UTC().Format(time.RFC3339))
}

func podBody(name, node string) []byte {
	nodeField := ""
	if node != "" {
		nodeField = fmt.Sprintf(`"nodeName":%q,`, node)
	}
	return fmt.Appendf(nil, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":%q,"labels":{"app":"bench","tier":"web"}},"spec":{%s"containers":[{"name":"web","image":"nginx:1.27","ports":[{"containerPort":80}],"resources":{"requests":{"cpu":"100m","memory":"64Mi"},"limits":{"memory":"128Mi"}}}]}}`, name, nodeField)
}

// parallel runs fn(i) for i in [0,n) on workers goroutines and returns
// the first error.
func parallel(n, workers int, fn func(i int) error) error {
	var next atomic.Int64
	var mu sync.Mutex
	var first error
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := fn(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	return first
}

// createNodes creates nodes node-0000... through the API.
func createNodes(tb testing.TB, p *serverProc, n int) {
	tb.Helper()
	c := p.client(32)
	defer c.CloseIdleConnections()
	err := parallel(n, 32, func(i int) error {
		code, b, err := p.do(context.Background(), c, http.MethodPost, "/api/v1/nodes", "application/json", nodeBody(nodeName(i)))
		if err != nil || code != http.StatusCreated {
			return fmt.Errorf("create %s = %d %s, %v", nodeName(i), code, b, err)
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
}

// agent is one simulated node: its own HTTPS client (so its own TLS
// connection, as a separate machine has) holding its assignment stream.
type agent struct {
	node   string
	client *http.Client
}

// arrivals records when each pod's ADDED event reached its node's stream.
type arrivals struct {
	mu       sync.Mutex
	at       map[string]time.Time // by pod name
	misroute atomic.Int64         // events for another node's pod
	count    atomic.Int64
}

// startAgents makes n agents and opens each one's assignment stream,
// `GET /api/v1/pods?watch=true&fieldSelector=spec.nodeName=<node>`,
// returning once every stream is open (the server answered 200, so its
// watcher is registered). Streams end when ctx does.
func startAgents(ctx context.Context, tb testing.TB, p *serverProc, n int, arr *arrivals) []*agent {
	tb.Helper()
	agents := make([]*agent, n)
	err := parallel(n, 32, func(i int) error {
		a := &agent{node: nodeName(i), client: p.client(1)}
		agents[i] = a
		req := p.request(ctx, http.MethodGet, "/api/v1/pods?watch=true&fieldSelector=spec.nodeName%3D"+a.node, "", nil)
		resp, err := a.client.Do(req)
		if err != nil {
			return fmt.Errorf("watch for %s: %w", a.node, err)
		}
		if resp.StatusCode != http.StatusOK {
			resp.Body.Close()
			return fmt.Errorf("watch for %s = %d", a.node, resp.StatusCode)
		}
		go a.read(resp, arr)
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		for _, a := range agents {
			if a != nil {
				a.client.CloseIdleConnections()
			}
		}
	})
	return agents
}

// read consumes the stream, stamping each ADDED pod's arrival.
func (a *agent) read(resp *http.Response, arr *arrivals) {
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		now := time.Now()
		if len(sc.Bytes()) == 0 || arr == nil {
			continue
		}
		var ev struct {
			Type   string `json:"type"`
			Object struct {
				Metadata struct {
					Name string `json:"name"`
				} `json:"metadata"`
				Spec struct {
					NodeName string `json:"nodeName"`
				} `json:"spec"`
			} `json:"object"`
		}
		if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.Type != "ADDED" {
			continue
		}
		if ev.Object.Spec.NodeName != a.node {
			arr.misroute.Add(1)
			continue
		}
		arr.mu.Lock()
		arr.at[ev.Object.Metadata.Name] = now
		arr.mu.Unlock()
		arr.count.Add(1)
	}
}

// percentile returns the q-quantile (0..1) of sorted durations.
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// latencies collects request latencies from many goroutines.
type latencies struct {
	mu sync.Mutex
	d  []time.Duration
}

func (l *latencies) add(d time.Duration) {
	l.mu.Lock()
	l.d = append(l.d, d)
	l.mu.Unlock()
}

func (l *latencies) sorted() []time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := slices.Clone(l.d)
	slices.Sort(s)
	return s
}
