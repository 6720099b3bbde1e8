package fleet

import "fmt"

// ServerMemory is where the server's memory was, from the Go runtime's
// figures in its /metrics (runtime.MemStats): what a resident set is
// made of, so that a run whose RSS differs from another's says whether
// its live heap, the collector's headroom, the pages the heap freed but
// kept, or its goroutines' stacks made the difference.
type ServerMemory struct {
	// HeapInUse is the heap's spans holding objects (live and not yet
	// collected); HeapAlloc the bytes of those objects.
	HeapInUse, HeapAlloc float64
	// HeapFree is heap memory free and still mapped (idle, not
	// released): resident until the scavenger or a forced release
	// returns it. Released was returned to the operating system.
	HeapFree, Released float64
	// Stacks is the goroutines' stacks.
	Stacks float64
	// NextGC is the heap size at which the next collection ends.
	NextGC float64
	// Sys is everything the runtime obtained from the system; Other is
	// what Sys holds outside the heap and the stacks (span and
	// collector metadata, caches).
	Sys, Other float64
}

// ParseServerMemory reads a ServerMemory from the server's /metrics text;
// ok is false if the runtime's figures are not in it.
func ParseServerMemory(text []byte) (m ServerMemory, ok bool) {
	get := func(name string) float64 {
		v, found := ParseCounter(text, name)
		ok = ok && found
		return v
	}
	ok = true
	m.HeapInUse = get("go_memstats_heap_inuse_bytes")
	m.HeapAlloc = get("go_memstats_heap_alloc_bytes")
	idle := get("go_memstats_heap_idle_bytes")
	m.Released = get("go_memstats_heap_released_bytes")
	m.HeapFree = idle - m.Released
	m.Stacks = get("go_memstats_stack_inuse_bytes")
	m.NextGC = get("go_memstats_next_gc_bytes")
	m.Sys = get("go_memstats_sys_bytes")
	heapSys := get("go_memstats_heap_sys_bytes")
	stackSys := get("go_memstats_stack_sys_bytes")
	m.Other = m.Sys - heapSys - stackSys
	return m, ok
}

func (m ServerMemory) String() string {
	const mib = 1 << 20
	return fmt.Sprintf("heap in use %.0f MiB (objects %.0f, next collection at %.0f), heap free but kept %.0f MiB, released %.0f MiB, stacks %.0f MiB, runtime's other %.0f MiB",
		m.HeapInUse/mib, m.HeapAlloc/mib, m.NextGC/mib, m.HeapFree/mib, m.Released/mib, m.Stacks/mib, m.Other/mib)
}

// KeepAlives is the server's watch stream heartbeats
// (skiff_watch_keepalives_total): sent, or skipped because the agent had
// been heard from on its connection since the last.
type KeepAlives struct{ Sent, Skipped float64 }

// ParseKeepAlives reads KeepAlives from the server's /metrics text.
func ParseKeepAlives(text []byte) KeepAlives {
	sent, _ := ParseCounter(text, `skiff_watch_keepalives_total{result="sent"}`)
	skipped, _ := ParseCounter(text, `skiff_watch_keepalives_total{result="skipped"}`)
	return KeepAlives{Sent: sent, Skipped: skipped}
}

// Since is k less an earlier reading.
func (k KeepAlives) Since(earlier KeepAlives) KeepAlives {
	return KeepAlives{Sent: k.Sent - earlier.Sent, Skipped: k.Skipped - earlier.Skipped}
}
