package network

import (
	"errors"
	"fmt"
	"os"
	goruntime "runtime"
	"strings"

	"github.com/vishvananda/netns"
)

// openNS opens the network namespace at path, or the calling thread's for
// "". The caller closes it.
func openNS(path string) (netns.NsHandle, error) {
	if path == "" {
		h, err := netns.Get()
		if err != nil {
			return netns.None(), fmt.Errorf("open own netns: %w", err)
		}
		return h, nil
	}
	h, err := netns.GetFromPath(path)
	if err != nil {
		return netns.None(), fmt.Errorf("open netns %s: %w", path, err)
	}
	return h, nil
}

// inNS runs fn on a locked OS thread switched into ns, and switches back.
// If switching back fails the thread stays locked and dies with its
// goroutine, so no goroutine ever runs in the wrong namespace.
func inNS(ns netns.NsHandle, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		goruntime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			goruntime.UnlockOSThread()
			errc <- fmt.Errorf("get current netns: %w", err)
			return
		}
		defer orig.Close()
		if err := netns.Set(ns); err != nil {
			goruntime.UnlockOSThread()
			errc <- fmt.Errorf("enter netns: %w", err)
			return
		}
		ferr := fn()
		if err := netns.Set(orig); err != nil {
			errc <- errors.Join(ferr, fmt.Errorf("return from netns: %w", err))
			return // the thread stays locked and is discarded
		}
		goruntime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

// writeSysctl sets a net sysctl ("net/ipv4/ip_forward") inside ns:
// /proc/sys/net belongs to the namespace of the thread that opens it.
func writeSysctl(ns netns.NsHandle, key, value string) error {
	if strings.Contains(key, "..") {
		return fmt.Errorf("sysctl %q: %w", key, ErrInvalid)
	}
	return inNS(ns, func() error {
		p := "/proc/sys/" + key
		cur, err := os.ReadFile(p)
		if err == nil && strings.TrimSpace(string(cur)) == value {
			return nil
		}
		if err := os.WriteFile(p, []byte(value), 0o644); err != nil {
			return fmt.Errorf("sysctl %s=%s: %w", strings.ReplaceAll(key, "/", "."), value, err)
		}
		return nil
	})
}
