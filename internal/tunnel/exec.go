package tunnel

import (
	"net/url"
	"strings"
)

// ExecRequest is what an exec or attach stream asks for: the command
// (exec only), which streams the client wants, and whether to allocate a
// terminal. The server builds it from kubectl's query; the agent reads
// it back with ParseExecRequest.
type ExecRequest struct {
	Command                    []string
	Stdin, Stdout, Stderr, TTY bool
}

// Query encodes e as a URL query (without "?").
func (e ExecRequest) Query() string {
	q := make([]string, 0, len(e.Command)+4)
	for _, c := range e.Command {
		q = append(q, "command="+url.QueryEscape(c))
	}
	for _, f := range []struct {
		k string
		v bool
	}{{"stdin", e.Stdin}, {"stdout", e.Stdout}, {"stderr", e.Stderr}, {"tty", e.TTY}} {
		if f.v {
			q = append(q, f.k+"=1")
		}
	}
	return strings.Join(q, "&")
}

// ParseExecRequest decodes what Query encoded.
func ParseExecRequest(q url.Values) ExecRequest {
	on := func(k string) bool { return q.Get(k) == "1" }
	return ExecRequest{Command: q["command"], Stdin: on("stdin"), Stdout: on("stdout"), Stderr: on("stderr"), TTY: on("tty")}
}
