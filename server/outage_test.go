package server

import (
	"fmt"
	"io"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/internal/pgtest"
)

// tcpProxy forwards loopback connections to PostgreSQL until cut: then
// it closes every connection and refuses new ones, as a network cut
// between one server and the database would.
type tcpProxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	cut   bool
	conns []net.Conn
}

func startProxy(t *testing.T, target string) *tcpProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{ln: ln, target: target}
	t.Cleanup(func() { ln.Close(); p.setCut(true) })
	go p.serve()
	return p
}

func (p *tcpProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.cut {
			p.mu.Unlock()
			c.Close()
			continue
		}
		d, err := net.Dial("tcp", p.target)
		if err != nil {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.conns = append(p.conns, c, d)
		p.mu.Unlock()
		go func() { io.Copy(d, c); d.Close() }() //nolint:errcheck // ends with either side
		go func() { io.Copy(c, d); c.Close() }() //nolint:errcheck // as above
	}
}

func (p *tcpProxy) setCut(cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = cut
	if cut {
		for _, c := range p.conns {
			c.Close()
		}
		p.conns = nil
	}
}

// TestPostgresServersSurviveDatastoreOutages: server A reaches PostgreSQL
// through a proxy, B directly. Cutting A's connection makes its writes
// fail with 503 and hands leadership to B, which schedules; once the
// connection is back A writes again. Restarting PostgreSQL under both:
// they recover without a restart of their own and a leader schedules
// again.
func TestPostgresServersSurviveDatastoreOutages(t *testing.T) {
	cluster := pgtest.Start(t, pgtest.Options{})
	db, err := cluster.NewDatabase()
	if err != nil {
		t.Fatal(err)
	}
	proxy := startProxy(t, net.JoinHostPort("127.0.0.1", strconv.Itoa(cluster.Port)))
	viaProxy := (&url.URL{Scheme: "postgres", User: url.User("postgres"), Host: proxy.ln.Addr().String(), Path: "/" + db, RawQuery: "sslmode=disable"}).String()

	keyFile := filepath.Join(t.TempDir(), "encryption.key") // the servers' shared key
	ha := startHarnessWith(t, "", nil, func(c *Config) { c.Datastore, c.EncryptionKeyFile, c.Clock = viaProxy, keyFile, clock.Real{} })
	a := newRemote(t, ha.info.URL, ha.dir)
	now := time.Now().UTC().Format(time.RFC3339)
	a.must("POST", "/api/v1/nodes", `{"apiVersion":"v1","kind":"Node","metadata":{"name":"edge-1"}}`, 201)
	a.must("PUT", "/api/v1/nodes/edge-1/status", fmt.Sprintf(`{"apiVersion":"v1","kind":"Node","metadata":{"name":"edge-1"},`+
		`"status":{"capacity":{"cpu":"2","memory":"1Gi","pods":"100"},"allocatable":{"cpu":"2","memory":"1Gi","pods":"100"},`+
		`"conditions":[{"type":"Ready","status":"True","lastHeartbeatTime":%q}]}}`, now), 200)
	pod := func(name string) string {
		return `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"` + name + `"},"spec":{"containers":[{"name":"c","image":"busybox"}]}}`
	}
	waitBound := func(r *remote, name string, within time.Duration) {
		t.Helper()
		start := time.Now()
		for {
			code, _, err := r.do("GET", "/api/v1/namespaces/default/pods/"+name, "")
			if err == nil && code == 200 && r.podNode(name) == "edge-1" {
				return
			}
			if time.Since(start) > within {
				t.Fatalf("pod %s not bound within %v", name, within)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	a.must("POST", "/api/v1/namespaces/default/pods", pod("p1"), 201)
	waitBound(a, "p1", 20*time.Second) // A leads: it started first
	hb := startHarnessWith(t, "", nil, func(c *Config) { c.Datastore, c.EncryptionKeyFile, c.Clock = cluster.URL(db), keyFile, clock.Real{} })
	b := newRemote(t, hb.info.URL, hb.dir)

	// Cut A off the database.
	proxy.setCut(true)
	start := time.Now()
	code, body, err := a.do("POST", "/api/v1/namespaces/default/configmaps", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cut"}}`)
	if err != nil || code != 503 {
		t.Errorf("write on the cut-off server = %d %s, %v; want 503", code, body, err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the cut-off write failed after %v; want promptly", d)
	}
	b.must("POST", "/api/v1/namespaces/default/pods", pod("p2"), 201)
	waitBound(b, "p2", 10*time.Second) // B took the lease over
	if code, _, err := b.do("GET", "/api/v1/namespaces/default/configmaps/cut", ""); err != nil || code != 404 {
		t.Errorf("the failed write is stored: GET = %d, %v; want 404", code, err)
	}

	// Reconnect A.
	proxy.setCut(false)
	deadline := time.Now().Add(15 * time.Second)
	for {
		code, body, err := a.do("POST", "/api/v1/namespaces/default/configmaps", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"back"}}`)
		if err == nil && code == 201 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("A after reconnecting: %d %s, %v; want 201", code, body, err)
		}
		time.Sleep(100 * time.Millisecond)
	}

	// Restart PostgreSQL under both.
	if err := cluster.Stop(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if err := cluster.Start(); err != nil {
		t.Fatal(err)
	}
	for i, r := range []*remote{a, b} {
		deadline := time.Now().Add(20 * time.Second)
		for {
			code, body, err := r.do("POST", "/api/v1/namespaces/default/configmaps",
				fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"after-restart-%d"}}`, i))
			if err == nil && code == 201 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("server %d after the PostgreSQL restart: %d %s, %v; want 201", i, code, body, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	a.must("POST", "/api/v1/namespaces/default/pods", pod("p3"), 201)
	waitBound(a, "p3", 20*time.Second)
}
