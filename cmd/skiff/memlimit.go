package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/skiffhq/skiff/api/resource"
	"github.com/skiffhq/skiff/server"
)

// serverGCPercent is the server's GOGC unless the environment sets one.
// The collector lets the heap grow past the live heap by GOGC percent of
// the live heap and the goroutine stacks before it collects. With 10,000
// agents connected (≈ 45 KiB of live heap and 8 KiB of stacks each) 100
// meant ≈ 1.27 GiB of RSS, 50 meant 1,016-1,021 MiB, and 35 meant
// 951-957 MiB (≈ 95 KiB an agent) for a collection every 10-15 s
// rather than about every 20 s: 1-2 points more of a core, and no slower heartbeats
// (docs/benchmarks.md, "Fleet" and "Fleet, round thirty"). A placement
// raises it for its burst (serverGCBurst).
const serverGCPercent = 35

// serverGCBurst raises the server's GOGC from serverGCPercent to 100
// while its store writes 1,000 changes a second or more (a placement
// writes 2,000-4,000; a fleet's steady state about 100; the join of
// 10,000 agents at 100 a second peaked at 526), and brings it back after
// 10 s below (server.GCBurst). At 50 the collector took a third of the
// server's CPU during a 10,000-pod placement (docs/benchmarks.md, "Fleet,
// round twenty-seven").
var serverGCBurst = server.GCBurst{Steady: serverGCPercent, Percent: 100, Writes: 1000, Calm: 10 * time.Second}

// serverGCPercentFor is the GOGC the server sets and how it was chosen:
// serverGCPercent unless GOGC is in the environment (the Go runtime has
// applied it already: set is then false).
func serverGCPercentFor(getenv func(string) string) (percent int, how string, set bool) {
	if env := getenv("GOGC"); env != "" {
		return 0, "GOGC=" + env, false
	}
	return serverGCPercent, "default " + strconv.Itoa(serverGCPercent), true
}

// The server's soft memory limit (runtime/debug.SetMemoryLimit). Without
// one the Go heap grows by GOGC percent (serverGCPercent) before each
// collection: a server holding 10,000 agents' connections (≈ 60 KiB of
// live heap each) then holds up to half as much again. With a limit, GOGC paces
// small heaps, and the collector works harder only as the heap nears the
// limit, so the process stays within the memory it was given.
const (
	memoryLimitAuto = "auto"
	memoryLimitOff  = "off"
	// memoryLimitShare is the part of the budget (cgroup limit or
	// machine memory) "auto" takes: the rest is for the local agent, the
	// page cache of the SQLite file and stacks.
	memoryLimitShare = 0.75
)

// memoryLimitFor returns the soft memory limit for --memory-limit v and
// how it was chosen: "off" is none (math.MaxInt64); a quantity ("1Gi",
// "900Mi", bytes) is taken as is; "auto" is 3/4 of budget(), the memory
// the server may use. GOMEMLIMIT in the environment wins over "auto" (the
// Go runtime has applied it already): ok is then false, nothing to set.
func memoryLimitFor(v string, getenv func(string) string, budget func() (int64, error)) (limit int64, how string, ok bool, err error) {
	switch v {
	case memoryLimitOff:
		return math.MaxInt64, "off", true, nil
	case memoryLimitAuto, "":
		if env := getenv("GOMEMLIMIT"); env != "" {
			return 0, "GOMEMLIMIT=" + env, false, nil
		}
		b, berr := budget()
		if berr != nil || b <= 0 {
			// Auto without a budget sets nothing; not a reason to fail.
			return 0, fmt.Sprintf("none: no memory budget found (%v)", berr), false, nil
		}
		return int64(float64(b) * memoryLimitShare), "auto: 3/4 of " + strconv.FormatInt(b>>20, 10) + " MiB", true, nil
	}
	q, err := resource.Parse(v)
	if err != nil {
		return 0, "", false, fmt.Errorf("--memory-limit %q: want auto, off or a size such as 1Gi: %w", v, err)
	}
	n := q.Value()
	if n < 64<<20 {
		return 0, "", false, fmt.Errorf("--memory-limit %q: at least 64Mi", v)
	}
	return n, "--memory-limit " + v, true, nil
}

// memoryBudget is the memory this process may use: its cgroup's
// memory.max (cgroup v2) when set, else the machine's MemTotal.
func memoryBudget() (int64, error) {
	total, err := memTotal("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	if max, err := cgroupMemoryMax("/proc/self/cgroup", "/sys/fs/cgroup"); err == nil && max > 0 && max < total {
		return max, nil
	}
	return total, nil
}

// memTotal reads MemTotal from a /proc/meminfo file, in bytes.
func memTotal(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:")
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: MemTotal: %w", path, err)
		}
		return kb << 10, nil
	}
	return 0, fmt.Errorf("%s: no MemTotal", path)
}

// cgroupMemoryMax reads the memory.max of this process's cgroup v2 (0
// when it is "max").
func cgroupMemoryMax(selfCgroup, root string) (int64, error) {
	b, err := os.ReadFile(selfCgroup)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		p, ok := strings.CutPrefix(line, "0::")
		if !ok {
			continue
		}
		v, err := os.ReadFile(root + p + "/memory.max")
		if err != nil {
			return 0, err
		}
		s := strings.TrimSpace(string(v))
		if s == "max" {
			return 0, nil
		}
		return strconv.ParseInt(s, 10, 64)
	}
	return 0, errors.New("not in a cgroup v2")
}
