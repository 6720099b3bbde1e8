package apiserver

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkHeartbeat measures one heartbeat-only node status PUT through
// the handler (no TLS): decode, validate, compare, answer.
func BenchmarkHeartbeat(b *testing.B) {
	h := newHarness(b)
	const nodes = 100
	for i := range nodes {
		h.do("POST", "/api/v1/nodes", "application/json", fmt.Sprintf(`{"apiVersion":"v1","kind":"Node","metadata":{"name":"n%d"}}`, i))
		h.do("PUT", fmt.Sprintf("/api/v1/nodes/n%d/status", i), "application/json", nodeStatusJSON(h.clock.Now(), "True"))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		h.do("PUT", fmt.Sprintf("/api/v1/nodes/n%d/status", i%nodes), "application/json", nodeStatusJSON(h.clock.Now().Add(time.Second), "True"))
	}
}
