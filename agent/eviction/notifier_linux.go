package eviction

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/skiffhq/skiff/agent/cgroups"
)

// rearmSlack is how far a new usage threshold may drift from the armed
// one before the v1 notifier re-arms (inactive file pages move a little
// all the time).
const rearmSlack = 1 << 20

// MemoryNotifier is the Notifier of cgroup hierarchies: on cgroup v1 a
// memory threshold eventfd (cgroup.event_control on
// memory.usage_in_bytes) per memory signal — the root memory cgroup for
// memory.available, the pods' root for allocatableMemory.available —
// armed at capacity − threshold + inactive_file, as the kubelet's
// notifier; on cgroup v2, which has no usage thresholds, a PSI trigger
// on the memory pressure of the same cgroups (/proc/pressure/memory for
// the whole machine) and memory.events of the pods' root, which changes
// whenever a pod meets its memory.high or memory.max or is OOM-killed
// (see notifier_v2_linux.go). Close it when done.
type MemoryNotifier struct {
	v2   bool
	dirs map[Signal]string // memory controller directory per signal
	ch   chan struct{}

	mu     sync.Mutex
	armed  map[Signal]*armedEvent
	poller *v2Poller // v2: the goroutine polling every armed watch
	closed bool
	wg     sync.WaitGroup
}

type armedEvent struct {
	usage   int64    // v1: usage threshold in bytes
	efd     *os.File // v1: the eventfd the kernel signals
	ufd     *os.File // v1: memory.usage_in_bytes
	watches []v2Watch
}

var _ Notifier = (*MemoryNotifier)(nil)

// NewMemoryNotifier returns a notifier for the cgroups cg manages.
func NewMemoryNotifier(cg *cgroups.Manager) (*MemoryNotifier, error) {
	root, err := cg.MemoryDir(true)
	if err != nil {
		return nil, err
	}
	pods, err := cg.MemoryDir(false)
	if err != nil {
		return nil, err
	}
	return &MemoryNotifier{
		v2:    cg.V2(),
		dirs:  map[Signal]string{SignalMemoryAvailable: root, SignalAllocatableMemoryAvailable: pods},
		ch:    make(chan struct{}, 1),
		armed: map[Signal]*armedEvent{},
	}, nil
}

// C implements Notifier.
func (n *MemoryNotifier) C() <-chan struct{} { return n.ch }

func (n *MemoryNotifier) fire() {
	select {
	case n.ch <- struct{}{}:
	default:
	}
}

// Arm implements Notifier.
func (n *MemoryNotifier) Arm(sig Signal, capacity, threshold int64) error {
	dir, ok := n.dirs[sig]
	if !ok {
		return fmt.Errorf("memory notifier: no cgroup for signal %s", sig)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return errors.New("memory notifier: closed")
	}
	old := n.armed[sig]
	if n.v2 {
		if old != nil {
			return nil // PSI and memory.events do not depend on the threshold
		}
		ws, err := openV2Watches(sig, dir)
		if err != nil {
			return err
		}
		n.armed[sig] = &armedEvent{watches: ws}
		return n.restartPollerLocked()
	}
	inactive, err := inactiveFile(dir)
	if err != nil {
		return err
	}
	usage := capacity - threshold + inactive
	if usage <= 0 {
		return fmt.Errorf("memory notifier: threshold %d beyond capacity %d", threshold, capacity)
	}
	if old != nil && abs(old.usage-usage) < rearmSlack {
		return nil
	}
	ev, err := n.armV1(dir, usage)
	if err != nil {
		return err
	}
	if old != nil {
		old.close()
	}
	n.armed[sig] = ev
	return nil
}

func abs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// inactiveFile reads the cgroup's inactive file pages (v1 memory.stat).
func inactiveFile(dir string) (int64, error) {
	b, err := os.ReadFile(filepath.Join(dir, "memory.stat"))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "total_inactive_file "); ok {
			return strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, nil
}

// armV1 registers an eventfd that the kernel signals when the cgroup's
// memory usage crosses usage, and a goroutine that fires on it.
func (n *MemoryNotifier) armV1(dir string, usage int64) (*armedEvent, error) {
	fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	// Fd() is never called on efd: it would make the file blocking and
	// take it from the runtime poller, so Close could not end a Read.
	efd := os.NewFile(uintptr(fd), "eventfd")
	ufdRaw, err := unix.Open(filepath.Join(dir, "memory.usage_in_bytes"), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		efd.Close()
		return nil, fmt.Errorf("open memory.usage_in_bytes: %w", err)
	}
	ufd := os.NewFile(uintptr(ufdRaw), "memory.usage_in_bytes")
	ctl := fmt.Sprintf("%d %d %d", fd, ufdRaw, usage)
	if err := os.WriteFile(filepath.Join(dir, "cgroup.event_control"), []byte(ctl), 0); err != nil {
		efd.Close()
		ufd.Close()
		return nil, fmt.Errorf("arm memory threshold in %s: %w", dir, err)
	}
	ev := &armedEvent{usage: usage, efd: efd, ufd: ufd}
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		var buf [8]byte
		for {
			if _, err := efd.Read(buf[:]); err != nil {
				return // closed on re-arm or Close
			}
			n.fire()
		}
	}()
	return ev, nil
}

func (e *armedEvent) close() {
	if e.efd != nil {
		e.efd.Close()
	}
	if e.ufd != nil {
		e.ufd.Close()
	}
	for _, w := range e.watches {
		w.f.Close()
	}
}

// Close disarms every threshold and waits for the goroutines.
func (n *MemoryNotifier) Close() error {
	n.mu.Lock()
	n.closed = true
	armed := n.armed
	n.armed = map[Signal]*armedEvent{}
	n.stopPollerLocked() // the poller never takes mu: waiting here is safe
	n.mu.Unlock()
	for _, e := range armed {
		if e.efd != nil {
			e.close() // v1: closing the eventfd ends its reader
		}
	}
	n.wg.Wait()
	for _, e := range armed {
		if e.efd == nil {
			e.close() // v2: the poller is gone, its files can go
		}
	}
	return nil
}
