package client

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/skiffhq/skiff/api"
)

// LogOptions selects what Logs streams.
type LogOptions struct {
	// Container names the container; "" is fine for one-container pods.
	Container string
	// Follow keeps the stream open for new lines until ctx is done.
	Follow bool
	// TailLines, when set, starts that many lines before the end.
	TailLines *int64
}

// Logs streams a container's log (GET .../pods/{pod}/log). An empty ns
// means NamespaceDefault. The caller must close the returned reader; the
// client timeout does not apply, ctx bounds the stream.
func (c *Client) Logs(ctx context.Context, ns, pod string, opts LogOptions) (io.ReadCloser, error) {
	res, ok := api.LookupResource("pods")
	if !ok {
		return nil, fmt.Errorf("logs: %w", errNoResource)
	}
	p, err := objectPath(res, ns, pod, subLog)
	if err != nil {
		return nil, err
	}
	q := url.Values{}
	if opts.Container != "" {
		q.Set("container", opts.Container)
	}
	if opts.Follow {
		q.Set("follow", "true")
	}
	if opts.TailLines != nil {
		q.Set("tailLines", strconv.FormatInt(*opts.TailLines, 10))
	}
	resp, err := c.send(ctx, request{method: http.MethodGet, path: p, query: q})
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}
