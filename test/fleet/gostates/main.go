package main

import (
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"golang.org/x/exp/trace"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: gostates <trace file> <function name part>")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "gostates:", err)
		os.Exit(1)
	}
}

type goroutine struct {
	since trace.Time // of its last state change
	// per timeline bucket: time in each state (GOSTATES_BUCKET set)
	buckets map[int]map[trace.GoState]time.Duration
	match   bool   // its own stack held the function at a change
	cause   string // what made it runnable, while it is
}

// waitCause names what made a goroutine runnable: the state it left,
// and for a running goroutine the reason it stopped (preempted, yield).
func waitCause(from trace.GoState, reason string) string {
	switch from {
	case trace.GoSyscall:
		return "system call returned without a core"
	case trace.GoWaiting:
		return "woken"
	case trace.GoRunning:
		if reason == "" {
			return "stopped running"
		}
		return "stopped running: " + reason
	}
	return "other (" + from.String() + ")"
}

func run(path, fn string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	r, err := trace.NewReader(f)
	if err != nil {
		return err
	}
	gs := map[trace.GoID]*goroutine{}
	total := map[trace.GoState]time.Duration{}
	var runnable []time.Duration
	byCause := map[string][]time.Duration{}
	flat, cum := map[string]int{}, map[string]int{}
	stoppedAt := map[string]int{}
	syscallAt := map[string]int{}
	syscalls := 0
	samples := 0
	var start trace.Time
	var bucket time.Duration
	if v := os.Getenv("GOSTATES_BUCKET"); v != "" {
		if bucket, err = time.ParseDuration(v); err != nil || bucket <= 0 {
			return fmt.Errorf("GOSTATES_BUCKET=%q: want a positive duration such as 1s", v)
		}
	}
	for {
		ev, err := r.ReadEvent()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if start == 0 {
			start = ev.Time()
		}
		if ev.Kind() == trace.EventStackSample {
			if g := gs[ev.Goroutine()]; g != nil && g.match {
				samples++
				seen := map[string]bool{}
				for fr := range ev.Stack().Frames() {
					if len(seen) == 0 {
						flat[fr.Func]++ // the innermost frame
					}
					if !seen[fr.Func] {
						seen[fr.Func] = true
						cum[fr.Func]++
					}
				}
			}
			continue
		}
		if ev.Kind() != trace.EventStateTransition {
			continue
		}
		st := ev.StateTransition()
		if st.Resource.Kind != trace.ResourceGoroutine {
			continue
		}
		g := gs[st.Resource.Goroutine()]
		if g == nil {
			g = &goroutine{}
			gs[st.Resource.Goroutine()] = g
		}
		for fr := range st.Stack.Frames() {
			if strings.Contains(fr.Func, fn) {
				g.match = true
			}
		}
		from, to := st.Goroutine()
		if g.match && g.since != 0 {
			d := time.Duration(ev.Time() - g.since)
			total[from] += d
			if bucket > 0 {
				g.addTimeline(from, time.Duration(g.since-start), time.Duration(ev.Time()-start), bucket)
			}
			if from == trace.GoRunnable {
				runnable = append(runnable, d)
				byCause[g.cause] = append(byCause[g.cause], d)
			}
		}
		if g.match && to == trace.GoSyscall {
			syscalls++
			syscallAt[callSite(st.Stack)]++
		}
		if to == trace.GoRunnable {
			g.cause = waitCause(from, st.Reason)
			if g.match && from == trace.GoRunning {
				// Where it was stopped: the first frames of its own
				// stack outside the runtime.
				var where []string
				for fr := range st.Stack.Frames() {
					if !strings.HasPrefix(fr.Func, "runtime.") && len(where) < 3 {
						where = append(where, fr.Func)
					}
				}
				stoppedAt[strings.Join(where, " ← ")]++
			}
		}
		g.since = ev.Time()
	}
	n := 0
	for _, g := range gs {
		if g.match {
			n++
		}
	}
	fmt.Printf("%d goroutines ran %s\n", n, fn)
	for _, s := range []trace.GoState{trace.GoRunning, trace.GoRunnable, trace.GoSyscall, trace.GoWaiting} {
		fmt.Printf("%-9v %v\n", s, total[s].Round(time.Millisecond))
	}
	if bucket > 0 {
		printTimeline(gs, bucket)
	}
	if len(runnable) > 0 {
		slices.Sort(runnable)
		fmt.Printf("waits for a core: %d, p50 %v, p99 %v, max %v\n", len(runnable),
			runnable[len(runnable)/2].Round(time.Microsecond), runnable[len(runnable)*99/100].Round(time.Microsecond), runnable[len(runnable)-1].Round(time.Microsecond))
	}
	for _, c := range slices.Sorted(maps.Keys(byCause)) {
		ws := byCause[c]
		slices.Sort(ws)
		var sum time.Duration
		for _, w := range ws {
			sum += w
		}
		fmt.Printf("  after %q: %d waits, %v in all, p50 %v, max %v\n", c, len(ws), sum.Round(time.Millisecond),
			ws[len(ws)/2].Round(time.Microsecond), ws[len(ws)-1].Round(time.Microsecond))
	}
	if len(stoppedAt) > 0 {
		fmt.Println("where they stopped running:")
		for _, w := range mostFirst(stoppedAt, 12) {
			fmt.Printf("  %3d %s\n", stoppedAt[w], w)
		}
	}
	if syscalls > 0 {
		fmt.Printf("system calls: %d; where they were made:\n", syscalls)
		for _, w := range mostFirst(syscallAt, 12) {
			fmt.Printf("  %6d %s\n", syscallAt[w], w)
		}
	}
	if samples > 0 {
		fmt.Printf("CPU samples of those goroutines: %d; by function, including callees (own in brackets):\n", samples)
		for _, f := range mostFirst(cum, 40) {
			fmt.Printf("  %5.1f%% (%4.1f%%) %s\n", 100*float64(cum[f])/float64(samples), 100*float64(flat[f])/float64(samples), f)
		}
	}
	return nil
}

// callSite names where a system call was made: the innermost frames
// of the caller's own code, past the runtime, the syscall packages and
// a C library translated to Go (modernc.org/libc) and its file I/O
// wrappers; for SQLite, "_walWriteOneFrame ← _walFrames" is a log frame
// written in a commit, "_getPageNormal ← _sqlite3PagerGet" a page not
// in the connection's cache.
func callSite(stk trace.Stack) string {
	var where []string
	for fr := range stk.Frames() {
		f := fr.Func
		if strings.HasPrefix(f, "runtime.") || strings.HasPrefix(f, "syscall.") || strings.HasPrefix(f, "internal/") ||
			strings.HasPrefix(f, "modernc.org/libc.") || isIOWrapper(f) {
			continue
		}
		if where = append(where, f); len(where) == 4 {
			break
		}
	}
	return strings.Join(where, " ← ")
}

// isIOWrapper reports SQLite's own thin wrappers around read, write and
// sync (in modernc.org/sqlite/lib), which every call site shares.
func isIOWrapper(f string) bool {
	name, ok := strings.CutPrefix(f, "modernc.org/sqlite/lib._")
	if !ok {
		return false
	}
	for _, p := range []string{"seekAnd", "unix", "sqlite3Os", "full_fsync", "robust_"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// mostFirst returns up to n of counts' keys, the highest counts first.
func mostFirst(counts map[string]int, n int) []string {
	keys := slices.Collect(maps.Keys(counts))
	slices.SortFunc(keys, func(a, b string) int { return counts[b] - counts[a] })
	return keys[:min(len(keys), n)]
}

// addTimeline adds the interval [from, to) (since the trace's start)
// spent in state s to g's buckets of width w.
func (g *goroutine) addTimeline(s trace.GoState, from, to, w time.Duration) {
	if g.buckets == nil {
		g.buckets = map[int]map[trace.GoState]time.Duration{}
	}
	for from < to {
		b := int(from / w)
		end := min(time.Duration(b+1)*w, to)
		if g.buckets[b] == nil {
			g.buckets[b] = map[trace.GoState]time.Duration{}
		}
		g.buckets[b][s] += end - from
		from = end
	}
}

// printTimeline prints, for each matching goroutine that ran at least
// 20 ms, its time running, runnable, in system calls and waiting per
// bucket (GOSTATES_BUCKET, a duration).
func printTimeline(gs map[trace.GoID]*goroutine, w time.Duration) {
	for _, id := range slices.Sorted(maps.Keys(gs)) {
		g := gs[id]
		var ran time.Duration
		for _, b := range g.buckets {
			ran += b[trace.GoRunning]
		}
		if !g.match || ran < 20*time.Millisecond {
			continue
		}
		fmt.Printf("goroutine %d (ms per %v: running/runnable/syscall/waiting)\n", id, w)
		for _, b := range slices.Sorted(maps.Keys(g.buckets)) {
			m := g.buckets[b]
			fmt.Printf("  %6v %5d %5d %5d %5d\n", time.Duration(b)*w, m[trace.GoRunning].Milliseconds(), m[trace.GoRunnable].Milliseconds(), m[trace.GoSyscall].Milliseconds(), m[trace.GoWaiting].Milliseconds())
		}
	}
}
