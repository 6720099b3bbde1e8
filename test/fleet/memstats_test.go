package fleet

import (
	"strings"
	"testing"
)

const memText = `go_memstats_heap_alloc_bytes 500
go_memstats_heap_idle_bytes 300
go_memstats_heap_inuse_bytes 600
go_memstats_heap_released_bytes 100
go_memstats_heap_sys_bytes 900
go_memstats_next_gc_bytes 700
go_memstats_stack_inuse_bytes 80
go_memstats_stack_sys_bytes 80
go_memstats_sys_bytes 1030
skiff_watch_keepalives_total{result="sent"} 12
skiff_watch_keepalives_total{result="skipped"} 40
`

func TestParseServerMemory(t *testing.T) {
	m, ok := ParseServerMemory([]byte(memText))
	if !ok {
		t.Fatal("not ok with every figure present")
	}
	want := ServerMemory{HeapInUse: 600, HeapAlloc: 500, HeapFree: 200, Released: 100, Stacks: 80, NextGC: 700, Sys: 1030, Other: 50}
	if m != want {
		t.Errorf("got %+v, want %+v", m, want)
	}
	// A missing figure is said, not read as zero.
	partial := strings.Replace(memText, "go_memstats_stack_inuse_bytes 80\n", "", 1)
	if _, ok := ParseServerMemory([]byte(partial)); ok {
		t.Error("ok without go_memstats_stack_inuse_bytes")
	}
	if s := m.String(); !strings.Contains(s, "heap free but kept 0 MiB") {
		t.Errorf("String() = %q", s)
	}
}

func TestParseKeepAlives(t *testing.T) {
	k := ParseKeepAlives([]byte(memText))
	if k != (KeepAlives{Sent: 12, Skipped: 40}) {
		t.Fatalf("got %+v", k)
	}
	if d := k.Since(KeepAlives{Sent: 2, Skipped: 10}); d != (KeepAlives{Sent: 10, Skipped: 30}) {
		t.Errorf("Since: got %+v", d)
	}
}
