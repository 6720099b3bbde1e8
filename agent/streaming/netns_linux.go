package streaming

import (
	"context"
	"fmt"
	"net"
	"runtime"
	"strconv"

	"github.com/vishvananda/netns"
)

// DialNetNS connects to 127.0.0.1:port inside the network namespace at
// path (the host's when path is ""). The socket is made on a thread
// switched into the namespace, and keeps the namespace afterwards.
func DialNetNS(ctx context.Context, path string, port int) (net.Conn, error) {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	var d net.Dialer
	if path == "" {
		return d.DialContext(ctx, "tcp", addr)
	}
	target, err := netns.GetFromPath(path)
	if err != nil {
		return nil, fmt.Errorf("open pod netns: %w", err)
	}
	defer target.Close()
	type result struct {
		c   net.Conn
		err error
	}
	ch := make(chan result, 1)
	go func() {
		// The thread is left locked so that it dies with the goroutine
		// rather than go back to the pool in the pod's namespace.
		runtime.LockOSThread()
		if err := netns.Set(target); err != nil {
			ch <- result{nil, fmt.Errorf("enter pod netns: %w", err)}
			return
		}
		c, err := d.DialContext(ctx, "tcp", addr)
		ch <- result{c, err}
	}()
	r := <-ch
	return r.c, r.err
}
