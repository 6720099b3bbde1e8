package containerd

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	goruntime "runtime"
	"strconv"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// createNetNS makes a new network namespace, bind-mounts it at target
// and brings its loopback up. A target that already holds a network
// namespace is kept as it is.
//
// The namespace is made on a locked OS thread that unshares, mounts
// /proc/self/task/<tid>/ns/net and switches back. If switching back
// fails the thread stays locked, so the Go runtime discards it with its
// goroutine instead of reusing a thread in the wrong namespace.
func createNetNS(target string) error {
	if isNetNS(target) {
		return nil
	}
	f, err := os.OpenFile(target, os.O_RDONLY|os.O_CREATE, 0o444)
	if err != nil {
		return fmt.Errorf("create netns file: %w", err)
	}
	f.Close()
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
		ns, err := netns.New()
		if err != nil {
			// unshare failed: the thread is still in its namespace.
			goruntime.UnlockOSThread()
			errc <- fmt.Errorf("new netns: %w", err)
			return
		}
		src := "/proc/self/task/" + strconv.Itoa(unix.Gettid()) + "/ns/net"
		err = unix.Mount(src, target, "none", unix.MS_BIND, "")
		if err != nil {
			err = fmt.Errorf("bind-mount netns at %s: %w", target, err)
		} else {
			err = loopbackUp(ns)
		}
		ns.Close()
		if serr := netns.Set(orig); serr != nil {
			errc <- errors.Join(err, fmt.Errorf("return to the agent's netns: %w", serr))
			return // the thread stays locked and dies with this goroutine
		}
		goruntime.UnlockOSThread()
		errc <- err
	}()
	if err := <-errc; err != nil {
		_ = removeNetNS(target)
		return err
	}
	return nil
}

func loopbackUp(ns netns.NsHandle) error {
	h, err := netlink.NewHandleAt(ns, unix.NETLINK_ROUTE)
	if err != nil {
		return fmt.Errorf("netlink in new netns: %w", err)
	}
	defer h.Close()
	lo, err := h.LinkByName("lo")
	if err != nil {
		return fmt.Errorf("find loopback: %w", err)
	}
	if err := h.LinkSetUp(lo); err != nil {
		return fmt.Errorf("bring loopback up: %w", err)
	}
	return nil
}

// isNetNS reports whether p is a mounted network namespace.
func isNetNS(p string) bool {
	var st unix.Statfs_t
	if err := unix.Statfs(p, &st); err != nil {
		return false
	}
	return st.Type == unix.NSFS_MAGIC
}

// removeNetNS unmounts and removes a netns file; a missing one is fine.
func removeNetNS(p string) error {
	if err := unix.Unmount(p, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("unmount netns %s: %w", p, err)
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove netns %s: %w", p, err)
	}
	return nil
}
