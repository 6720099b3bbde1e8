package promtext

import (
	"bufio"
	"bytes"
	"strings"
)

// knownHelp describes the process and runtime figures people chart most.
var knownHelp = map[string]string{
	"process_resident_memory_bytes": "Resident set size of the process in bytes.",
	"process_cpu_seconds_total":     "User and system CPU time the process has used, in seconds.",
	"process_start_time_seconds":    "Start time of the process since the Unix epoch, in seconds.",
	"process_open_fds":              "Open file descriptors.",
	"process_max_fds":               "The limit on open file descriptors.",
	"process_virtual_memory_bytes":  "Virtual memory size of the process in bytes.",
	"go_goroutines":                 "Goroutines that currently exist.",
	"go_threads":                    "OS threads created.",
	"go_memstats_heap_alloc_bytes":  "Bytes of allocated heap objects.",
	"go_memstats_sys_bytes":         "Bytes of memory obtained from the OS.",
	"go_gc_duration_seconds":        "Pause durations of garbage collection cycles.",
	"go_info":                       "The Go version the binary was built with.",
}

// Annotate copies an exposition without metadata (VictoriaMetrics/
// metrics' WriteProcessMetrics) to w, adding # HELP and # TYPE to each
// family: summaries where samples carry a quantile label, counters for
// names ending in _total, gauges otherwise. Histograms without _sum and
// _count (the Go runtime's scheduler latencies and GC pauses) cannot be
// read as histograms and are left out.
func Annotate(w *Writer, text []byte) {
	type fam struct {
		name  string
		t     Type
		lines []string
	}
	var order []*fam
	byName := map[string]*fam{}
	names := map[string]bool{}
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(text))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		lines = append(lines, l)
		names[sampleName(l)] = true
	}
	for _, l := range lines {
		name := sampleName(l)
		fname, t := name, Gauge
		switch {
		case strings.Contains(l, `quantile="`):
			t = Summary
		case strings.HasSuffix(name, "_bucket"):
			base := strings.TrimSuffix(name, "_bucket")
			if !names[base+"_sum"] || !names[base+"_count"] {
				continue // an incomplete histogram
			}
			fname, t = base, Histogram
		case strings.HasSuffix(name, "_sum") || strings.HasSuffix(name, "_count"):
			base := name[:strings.LastIndexByte(name, '_')]
			if f := byName[base]; f != nil && (f.t == Summary || f.t == Histogram) {
				fname, t = base, f.t
			} else if strings.HasSuffix(name, "_total") {
				t = Counter
			}
		case strings.HasSuffix(name, "_total"):
			t = Counter
		}
		f := byName[fname]
		if f == nil {
			f = &fam{name: fname, t: t}
			byName[fname] = f
			order = append(order, f)
		}
		f.lines = append(f.lines, l)
	}
	for _, f := range order {
		help := knownHelp[f.name]
		if help == "" {
			help = "Go runtime figure (see runtime/metrics)."
			if strings.HasPrefix(f.name, "process_") {
				help = "Process figure read from /proc."
			}
		}
		w.Declare(f.name, f.t, help)
		for _, l := range f.lines {
			w.printf("%s\n", l)
		}
	}
}

func sampleName(line string) string {
	if i := strings.IndexAny(line, "{ "); i > 0 {
		return line[:i]
	}
	return line
}
