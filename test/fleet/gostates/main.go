package main

import (
	"fmt"
	"io"
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
	match bool       // its own stack held the function at a change
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
	for {
		ev, err := r.ReadEvent()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
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
		from, _ := st.Goroutine()
		if g.match && g.since != 0 {
			d := time.Duration(ev.Time() - g.since)
			total[from] += d
			if from == trace.GoRunnable {
				runnable = append(runnable, d)
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
	if len(runnable) > 0 {
		slices.Sort(runnable)
		fmt.Printf("waits for a core: %d, p50 %v, p99 %v, max %v\n", len(runnable),
			runnable[len(runnable)/2].Round(time.Microsecond), runnable[len(runnable)*99/100].Round(time.Microsecond), runnable[len(runnable)-1].Round(time.Microsecond))
	}
	return nil
}
