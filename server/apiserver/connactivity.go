package apiserver

import (
	"context"
	"sync/atomic"
)

// ConnActivity counts what a client connection has been sent: answers to
// its requests and its watch streams' writes. A watch stream's keep-alive
// is there so that a client hears from the connection at least every
// heartbeat (api/client's HTTP/2 health check pings after 15 s of silence,
// client-go's after 30 s); on a connection that answers other requests
// anyway (an agent's heartbeats and reports, on the one connection that
// also carries its pod watch) it is a write and a wake-up of the client
// for nothing, a thousand a second for 10,000 agents.
type ConnActivity struct{ n atomic.Uint64 }

type connActivityKey struct{}

// WithConnActivity returns ctx carrying a new ConnActivity: the
// http.Server's ConnContext, so that each connection's requests share
// one.
func WithConnActivity(ctx context.Context) context.Context {
	return context.WithValue(ctx, connActivityKey{}, new(ConnActivity))
}

// NoteAnswered records that the request of ctx has been answered on its
// connection (nothing when ctx carries no ConnActivity).
func NoteAnswered(ctx context.Context) { connActivityOf(ctx).note() }

func connActivityOf(ctx context.Context) *ConnActivity {
	a, _ := ctx.Value(connActivityKey{}).(*ConnActivity)
	return a
}

func (a *ConnActivity) note() {
	if a != nil {
		a.n.Add(1)
	}
}

func (a *ConnActivity) load() uint64 {
	if a == nil {
		return 0
	}
	return a.n.Load()
}

// WatchKeepAlives returns how many watch heartbeats (keep-alive newlines
// and BOOKMARKs) were written and how many were skipped because the
// connection had been written to since the last.
func (s *Server) WatchKeepAlives() (sent, skipped uint64) {
	return s.keepAlives.Load(), s.keepAlivesSkipped.Load()
}

// WatchStreams returns the watch streams open, single (a GET with watch)
// and shared (WatchesPath), and the watches they carry.
func (s *Server) WatchStreams() (single, shared, watches int64) {
	return s.singleStreams.Load(), s.sharedStreams.Load(), s.watches.Load()
}
