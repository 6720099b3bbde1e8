package server

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api/client"
	"github.com/skiffhq/skiff/internal/testenv"
)

// BenchmarkNodeReports measures what the server pays for one agent's
// periodic calls, sent as the agent sends them (api/client, one HTTP/2
// connection, its node credential) to a real server on TLS and SQLite:
// the lightweight heartbeat (every 10 s) and the usage report (every
// 15 s). Both ends run in this process, so B/op and allocs/op count the
// client's share too; cpu-µs/op is the process's CPU time per call.
//
//	go test ./server -run '^$' -bench NodeReports -benchmem
func BenchmarkNodeReports(b *testing.B) {
	h := startHarness(b, "", nil)
	admin := h.adminToken()
	_, cred := h.join(h.joinToken(), "edge-1", "")
	h.mustDo(http.MethodPost, "/api/v1/nodes", admin, `{"apiVersion":"v1","kind":"Node","metadata":{"name":"edge-1"}}`, http.StatusCreated)
	caPEM, err := os.ReadFile(h.info.CAPath)
	if err != nil {
		b.Fatal(err)
	}
	c, err := client.New(client.Config{Server: h.info.URL, CAData: caPEM, Token: cred})
	if err != nil {
		b.Fatal(err)
	}
	defer c.CloseIdleConnections()
	ctx := context.Background()
	call := func(path string, body []byte) {
		var r io.Reader
		if body != nil {
			r = bytes.NewReader(body)
		}
		resp, err := c.Do(ctx, http.MethodPost, path, r)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body) //nolint:errcheck // drained for reuse
		resp.Body.Close()
	}
	at := time.Now()
	cases := []struct {
		name string
		path string
		body func() []byte
	}{
		{"heartbeat", "/api/v1/skiff/nodes/edge-1/heartbeat", func() []byte { return nil }},
		{"usage-report", "/api/v1/skiff/nodes/edge-1/stats", func() []byte {
			at = at.Add(15 * time.Second)
			return []byte(report(at, at.Sub(time.Time{}).Seconds()/1e6,
				podUsage("web", "uid-web", 0.1, 64<<20), podUsage("db", "uid-db", 0.2, 128<<20)))
		}},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			for range 50 { // warm: the node index, the connection
				call(tc.path, tc.body())
			}
			bodies := make([][]byte, b.N)
			for i := range bodies {
				bodies[i] = tc.body()
			}
			cpu0 := testenv.ProcessCPU(b)
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				call(tc.path, bodies[i])
			}
			b.StopTimer()
			b.ReportMetric(float64(testenv.ProcessCPU(b)-cpu0)/float64(time.Microsecond)/float64(b.N), "cpu-µs/op")
		})
	}
	runtime.KeepAlive(h)
}
