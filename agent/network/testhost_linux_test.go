package network

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netns"
)

// The integration tests build their own "hosts": network namespaces made
// with `ip netns add`, joined by a veth pair the test creates. Every
// namespace is deleted at cleanup (which takes its links, bridge, vxlan
// device and nftables table with it), so nothing touches the real host
// and no traffic leaves the namespaces.

func run(t testing.TB, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

func requireTools(t testing.TB) {
	t.Helper()
	for _, tool := range []string{"ip", "nft", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not found (make deps installs iproute2, nftables, curl): %v", tool, err)
		}
	}
}

// newNS makes a named network namespace with loopback up and deletes it
// when the test ends; it returns its path.
func newNS(t testing.TB, role string) string {
	t.Helper()
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	name := "sktest-" + role + "-" + hex.EncodeToString(b)
	run(t, "ip", "netns", "add", name)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", name).Run() })
	run(t, "ip", "-n", name, "link", "set", "lo", "up")
	return filepath.Join("/run/netns", name)
}

func nsName(path string) string { return filepath.Base(path) }

// joinHosts links two host namespaces with a veth pair and gives them
// addrA and addrB (a /24 that exists only between them).
func joinHosts(t testing.TB, a, b, addrA, addrB string) {
	t.Helper()
	run(t, "ip", "-n", nsName(a), "link", "add", "wire", "type", "veth", "peer", "name", "wire", "netns", nsName(b))
	run(t, "ip", "-n", nsName(a), "addr", "add", addrA+"/24", "dev", "wire")
	run(t, "ip", "-n", nsName(b), "addr", "add", addrB+"/24", "dev", "wire")
	run(t, "ip", "-n", nsName(a), "link", "set", "wire", "up")
	run(t, "ip", "-n", nsName(b), "link", "set", "wire", "up")
}

// listenIn opens a listener inside the namespace at path: the socket
// belongs to the namespace it was made in, whichever thread serves it.
func listenIn(t testing.TB, path, network, addr string) net.Listener {
	t.Helper()
	ns, err := netns.GetFromPath(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	var ln net.Listener
	if err := inNS(ns, func() (err error) { ln, err = net.Listen(network, addr); return err }); err != nil {
		t.Fatalf("listen %s in %s: %v", addr, path, err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

func listenUDPIn(t testing.TB, path, addr string) net.PacketConn {
	t.Helper()
	ns, err := netns.GetFromPath(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	var pc net.PacketConn
	if err := inNS(ns, func() (err error) { pc, err = net.ListenPacket("udp4", addr); return err }); err != nil {
		t.Fatalf("listen udp %s in %s: %v", addr, path, err)
	}
	t.Cleanup(func() { pc.Close() })
	return pc
}

// dialIn connects from inside the namespace at path.
func dialIn(path, network, addr string, timeout time.Duration) (net.Conn, error) {
	ns, err := netns.GetFromPath(path)
	if err != nil {
		return nil, err
	}
	defer ns.Close()
	var c net.Conn
	err = inNS(ns, func() (err error) { c, err = net.DialTimeout(network, addr, timeout); return err })
	return c, err
}

// serveHTTP answers every request on ln with body.
func serveHTTP(t testing.TB, ln net.Listener, body string) {
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, body) }), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close() })
}

// httpGetIn fetches url from inside the namespace at path with a Go
// client whose connections are made there.
func httpGetIn(path, url string) (string, error) {
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		return dialIn(path, network, addr, 3*time.Second)
	}, DisableKeepAlives: true}
	c := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var sb strings.Builder
	buf := make([]byte, 512)
	for {
		n, err := resp.Body.Read(buf)
		sb.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return sb.String(), nil
}

// curlIn runs curl inside the namespace at path.
func curlIn(path, url string) (string, error) {
	out, err := exec.Command("ip", "netns", "exec", nsName(path), "curl", "-sS", "--max-time", "3", url).CombinedOutput()
	return string(out), err
}

// linkExists reports whether link name exists in the namespace at path.
func linkExists(t testing.TB, path, name string) bool {
	t.Helper()
	return exec.Command("ip", "-n", nsName(path), "link", "show", name).Run() == nil
}

func nftTable(t testing.TB, path string) string {
	t.Helper()
	out, _ := exec.Command("ip", "netns", "exec", nsName(path), "nft", "list", "table", "ip", DefaultTable).CombinedOutput()
	return string(out)
}
