package eviction

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// psiTrigger asks cgroup v2 to wake the manager when tasks stalled on
// memory for 100 ms within any 1 s window.
const psiTrigger = "some 100000 1000000"

// v2Watch is one file the v2 poller waits on: a memory.pressure file
// holding a PSI trigger (POLLPRI when the trigger fires), or a cgroup
// events file (POLLPRI|POLLERR when a counter changed; it must be read
// again to wait for the next change).
type v2Watch struct {
	f   *os.File
	fd  int
	psi bool
}

// openV2Watches opens the watches of a signal's cgroup dir: a PSI
// trigger on its memory.pressure, or on /proc/pressure/memory for the
// hierarchy's root (which has no memory.pressure of its own on some
// kernels and is the whole machine anyway), and its memory.events when
// it has one (the root has none). Either alone will do: kernels booted
// without PSI (psi=0, the default of some distributions) still wake the
// notifier through memory.events. It fails only when neither opens.
func openV2Watches(sig Signal, dir string) ([]v2Watch, error) {
	var ws []v2Watch
	psi, psiErr := openPSI(sig, dir)
	if psiErr == nil {
		ws = append(ws, psi)
	}
	events := filepath.Join(dir, "memory.events")
	ef, err := os.Open(events)
	if err == nil {
		w := v2Watch{f: ef, fd: int(ef.Fd())}
		if err = w.reread(); err == nil {
			return append(ws, w), nil
		}
		ef.Close()
	}
	if len(ws) > 0 {
		return ws, nil
	}
	return nil, fmt.Errorf("memory notifier: %w", errors.Join(psiErr, err))
}

// openPSI opens the memory pressure file for sig's cgroup dir and
// writes psiTrigger to it.
func openPSI(sig Signal, dir string) (v2Watch, error) {
	pressure := filepath.Join(dir, "memory.pressure")
	if _, err := os.Stat(pressure); errors.Is(err, fs.ErrNotExist) && sig == SignalMemoryAvailable {
		pressure = "/proc/pressure/memory"
	}
	f, err := os.OpenFile(pressure, os.O_RDWR, 0)
	if err != nil {
		return v2Watch{}, err
	}
	if _, err := f.WriteString(psiTrigger); err != nil {
		f.Close()
		return v2Watch{}, fmt.Errorf("arm PSI trigger in %s: %w", pressure, err)
	}
	return v2Watch{f: f, fd: int(f.Fd()), psi: true}, nil
}

// reread reads an events file from the start, which makes poll wait for
// the next change.
func (w v2Watch) reread() error {
	var buf [512]byte
	_, err := unix.Pread(w.fd, buf[:], 0)
	return err
}

// v2Poller is the goroutine that polls every armed watch. It blocks in
// poll(2) with no timeout; stop (an eventfd) ends it.
type v2Poller struct {
	stop *os.File
	done chan struct{}
}

// restartPollerLocked replaces the poller with one that polls the
// watches of every armed signal (Arm adds a signal's watches once).
func (n *MemoryNotifier) restartPollerLocked() error {
	n.stopPollerLocked()
	var ws []v2Watch
	for _, e := range n.armed {
		ws = append(ws, e.watches...)
	}
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return fmt.Errorf("memory notifier: eventfd: %w", err)
	}
	p := &v2Poller{stop: os.NewFile(uintptr(efd), "eventfd"), done: make(chan struct{})}
	n.poller = p
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		defer close(p.done)
		n.poll(efd, ws)
	}()
	return nil
}

// stopPollerLocked ends the poller, if one runs, and waits for it.
func (n *MemoryNotifier) stopPollerLocked() {
	p := n.poller
	if p == nil {
		return
	}
	n.poller = nil
	var one [8]byte
	binary.NativeEndian.PutUint64(one[:], 1) // an eventfd counter increment
	if _, err := unix.Write(int(p.stop.Fd()), one[:]); err == nil {
		<-p.done
	}
	p.stop.Close()
}

// poll waits for the watches until stopFd is readable. A PSI trigger
// that fired, or an events file that changed, fires the notifier; a
// watch whose cgroup went away (POLLERR/POLLHUP without news, or a
// failed read) is dropped.
func (n *MemoryNotifier) poll(stopFd int, ws []v2Watch) {
	fds := make([]unix.PollFd, 0, len(ws)+1)
	fds = append(fds, unix.PollFd{Fd: int32(stopFd), Events: unix.POLLIN})
	for _, w := range ws {
		fds = append(fds, unix.PollFd{Fd: int32(w.fd), Events: unix.POLLPRI})
	}
	for {
		_, err := unix.Poll(fds, -1)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || fds[0].Revents != 0 {
			return
		}
		fired := false
		for i := range ws {
			pf := &fds[i+1]
			ev := pf.Revents
			pf.Revents = 0
			switch {
			case ev == 0:
			case ws[i].psi && ev&unix.POLLPRI != 0:
				fired = true
			case ws[i].psi:
				pf.Fd = -1 // the trigger is gone: poll skips negative fds
			case ev&(unix.POLLPRI|unix.POLLERR) != 0:
				if ws[i].reread() != nil {
					pf.Fd = -1
					continue
				}
				fired = true
			}
		}
		if fired {
			n.fire()
		}
	}
}
