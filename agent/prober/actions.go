package prober

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/skiffhq/skiff/api"
)

// maxBody is how much of an HTTP probe's answer is read.
const maxBody = 10 << 10

// target is what a probe acts on.
type target struct {
	podIP       string
	containerID string
	container   *api.Container
}

// runProbe performs p's action once; it returns Success or Failure and,
// for a failure, why.
func (m *Manager) runProbe(ctx context.Context, p *api.Probe, t target) (Result, string) {
	timeout := time.Duration(p.TimeoutSeconds) * time.Second
	switch {
	case p.Exec != nil:
		if len(p.Exec.Command) == 0 {
			return Failure, "exec probe has no command"
		}
		code, out, err := m.cfg.Runtime.Exec(ctx, t.containerID, p.Exec.Command, timeout)
		if err != nil {
			return Failure, fmt.Sprintf("exec %q: %v", p.Exec.Command[0], err)
		}
		if code != 0 {
			return Failure, fmt.Sprintf("command %q exited with %d: %s", strings.Join(p.Exec.Command, " "), code, strings.TrimSpace(string(out)))
		}
		return Success, ""
	case p.HTTPGet != nil:
		return m.httpProbe(ctx, p.HTTPGet, t, timeout)
	case p.TCPSocket != nil:
		host := p.TCPSocket.Host
		if host == "" {
			host = t.podIP
		}
		port, err := resolvePort(p.TCPSocket.Port, t.container)
		if err != nil {
			return Failure, err.Error()
		}
		if host == "" {
			return Failure, "pod has no IP"
		}
		dctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		c, err := m.cfg.Dial(dctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err != nil {
			return Failure, fmt.Sprintf("dial tcp %s: %v", net.JoinHostPort(host, strconv.Itoa(port)), err)
		}
		c.Close()
		return Success, ""
	}
	return Failure, "probe has no action"
}

func (m *Manager) httpProbe(ctx context.Context, a *api.HTTPGetAction, t target, timeout time.Duration) (Result, string) {
	host := a.Host
	if host == "" {
		host = t.podIP
	}
	if host == "" {
		return Failure, "pod has no IP"
	}
	port, err := resolvePort(a.Port, t.container)
	if err != nil {
		return Failure, err.Error()
	}
	scheme := strings.ToLower(a.Scheme)
	if scheme == "" {
		scheme = "http"
	}
	if scheme != "http" && scheme != "https" {
		return Failure, fmt.Sprintf("unsupported scheme %q", a.Scheme)
	}
	path := a.Path
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	u := &url.URL{Scheme: scheme, Host: net.JoinHostPort(host, strconv.Itoa(port))}
	full := u.String() + path
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, full, nil)
	if err != nil {
		return Failure, fmt.Sprintf("bad probe URL %q: %v", full, err)
	}
	req.Header.Set("User-Agent", "skiff-probe/1")
	req.Header.Set("Accept", "*/*")
	for _, h := range a.HTTPHeaders {
		if strings.EqualFold(h.Name, "Host") {
			req.Host = h.Value
			continue
		}
		req.Header.Add(h.Name, h.Value)
	}
	tr := &http.Transport{
		DialContext:       m.cfg.Dial,
		DisableKeepAlives: true,
		// probes check that the endpoint answers, not who it is, as the
		// kubelet does
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		return Failure, fmt.Sprintf("GET %s: %v", full, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if resp.StatusCode >= 200 && resp.StatusCode < 400 {
		return Success, ""
	}
	return Failure, fmt.Sprintf("HTTP probe failed with statuscode: %d %s", resp.StatusCode, strings.TrimSpace(string(body)))
}

// resolvePort turns a probe port (a number or a container port's name)
// into a port number.
func resolvePort(p api.IntOrString, c *api.Container) (int, error) {
	if p.Type == api.String {
		s := p.StrVal
		if n, err := strconv.Atoi(s); err == nil {
			return checkPort(n)
		}
		if c != nil {
			for _, cp := range c.Ports {
				if cp.Name == s {
					return checkPort(int(cp.ContainerPort))
				}
			}
		}
		return 0, fmt.Errorf("port %q not found in the container's ports", s)
	}
	return checkPort(int(p.IntVal))
}

func checkPort(n int) (int, error) {
	if n <= 0 || n > 65535 {
		return 0, errors.New("invalid port number " + strconv.Itoa(n))
	}
	return n, nil
}
