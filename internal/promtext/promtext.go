package promtext

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// Type is a metric family's type as # TYPE writes it.
type Type string

// The family types skiff writes.
const (
	Counter   Type = "counter"
	Gauge     Type = "gauge"
	Histogram Type = "histogram"
	Summary   Type = "summary"
	Untyped   Type = "untyped"
)

// Writer writes one exposition to w. Each family's # HELP and # TYPE are
// written before its first sample, once; callers write a family's
// samples together. The first write error is kept and later writes are
// skipped (Err returns it). A Writer is for one goroutine.
type Writer struct {
	w        io.Writer
	declared map[string]bool
	err      error
}

// NewWriter returns a Writer on w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w, declared: map[string]bool{}} }

// Err returns the first write error.
func (w *Writer) Err() error { return w.err }

func (w *Writer) printf(format string, args ...any) {
	if w.err == nil {
		_, w.err = fmt.Fprintf(w.w, format, args...)
	}
}

// Declare writes family's HELP and TYPE unless already written.
func (w *Writer) Declare(family string, t Type, help string) {
	if w.declared[family] {
		return
	}
	w.declared[family] = true
	w.printf("# HELP %s %s\n# TYPE %s %s\n", family, escapeHelp(help), family, t)
}

// Sample writes one sample line; labels is "" or `k="v",k2="v2"` (see
// Labels).
func (w *Writer) Sample(name, labels string, v float64) {
	if labels == "" {
		w.printf("%s %s\n", name, formatFloat(v))
		return
	}
	w.printf("%s{%s} %s\n", name, labels, formatFloat(v))
}

// Counter declares family as a counter and writes one sample of it.
func (w *Writer) Counter(family, help, labels string, v float64) {
	w.Declare(family, Counter, help)
	w.Sample(family, labels, v)
}

// Gauge declares family as a gauge and writes one sample of it.
func (w *Writer) Gauge(family, help, labels string, v float64) {
	w.Declare(family, Gauge, help)
	w.Sample(family, labels, v)
}

// Histogram declares family as a histogram and writes s with labels:
// cumulative le buckets, +Inf, _sum and _count.
func (w *Writer) Histogram(family, help, labels string, s Snapshot) {
	w.Declare(family, Histogram, help)
	sep := ""
	if labels != "" {
		sep = ","
	}
	for i, b := range s.Bounds {
		w.printf("%s_bucket{%s%sle=%q} %d\n", family, labels, sep, formatFloat(b), s.Cumulative[i])
	}
	w.printf("%s_bucket{%s%sle=\"+Inf\"} %d\n", family, labels, sep, s.Count)
	w.Sample(family+"_sum", labels, s.Sum)
	w.Sample(family+"_count", labels, float64(s.Count))
}

// Labels renders name/value pairs as `k="v",...`, values escaped.
func Labels(kv ...string) string {
	var b strings.Builder
	for i := 0; i+1 < len(kv); i += 2 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(kv[i])
		b.WriteString(`="`)
		b.WriteString(escapeLabel(kv[i+1]))
		b.WriteByte('"')
	}
	return b.String()
}

var labelEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
var helpEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`)

func escapeLabel(s string) string { return labelEscaper.Replace(s) }
func escapeHelp(s string) string  { return helpEscaper.Replace(s) }

func formatFloat(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// LatencyBounds are the le bounds of request and reconcile latencies, in
// seconds (as client-go's and the apiserver's, trimmed).
var LatencyBounds = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

// Hist is a classic histogram with fixed upper bounds. Observe is
// lock-free; the zero value is not usable (NewHist).
type Hist struct {
	bounds  []float64
	counts  []atomic.Uint64 // per bucket (not cumulative); the last is +Inf
	sumBits atomic.Uint64
}

// NewHist returns a histogram with the given ascending upper bounds.
func NewHist(bounds []float64) *Hist {
	return &Hist{bounds: slices.Clone(bounds), counts: make([]atomic.Uint64, len(bounds)+1)}
}

// Observe records v.
func (h *Hist) Observe(v float64) {
	i, _ := slices.BinarySearch(h.bounds, v) // first bound ≥ v: le is inclusive
	h.counts[i].Add(1)
	for {
		old := h.sumBits.Load()
		if h.sumBits.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+v)) {
			return
		}
	}
}

// Snapshot is a histogram's state: cumulative counts per bound.
type Snapshot struct {
	Bounds     []float64
	Cumulative []uint64
	Count      uint64
	Sum        float64
}

// Snapshot reads h. Counts read while Observe runs may be off by the
// observations in flight, never negative or decreasing.
func (h *Hist) Snapshot() Snapshot {
	s := Snapshot{Bounds: h.bounds, Cumulative: make([]uint64, len(h.bounds))}
	var c uint64
	for i := range h.bounds {
		c += h.counts[i].Load()
		s.Cumulative[i] = c
	}
	s.Count = c + h.counts[len(h.bounds)].Load()
	s.Sum = math.Float64frombits(h.sumBits.Load())
	return s
}

// HistVec is histograms by label set, created on first use. Safe for
// concurrent use.
type HistVec struct {
	bounds []float64
	mu     sync.Mutex
	m      map[string]*Hist
}

// NewHistVec returns an empty HistVec whose histograms have bounds.
func NewHistVec(bounds []float64) *HistVec { return &HistVec{bounds: bounds, m: map[string]*Hist{}} }

// With returns the histogram of labels (as Labels renders them).
func (v *HistVec) With(labels string) *Hist {
	v.mu.Lock()
	defer v.mu.Unlock()
	h := v.m[labels]
	if h == nil {
		h = NewHist(v.bounds)
		v.m[labels] = h
	}
	return h
}

// Write writes every histogram of v as family, sorted by labels.
func (v *HistVec) Write(w *Writer, family, help string) {
	v.mu.Lock()
	keys := make([]string, 0, len(v.m))
	for k := range v.m {
		keys = append(keys, k)
	}
	hs := make(map[string]*Hist, len(v.m))
	for _, k := range keys {
		hs[k] = v.m[k]
	}
	v.mu.Unlock()
	slices.Sort(keys)
	w.Declare(family, Histogram, help)
	for _, k := range keys {
		w.Histogram(family, help, k, hs[k].Snapshot())
	}
}

// CounterVec is counters by label set. Safe for concurrent use.
type CounterVec struct {
	mu sync.Mutex
	m  map[string]*atomic.Uint64
}

// NewCounterVec returns an empty CounterVec.
func NewCounterVec() *CounterVec { return &CounterVec{m: map[string]*atomic.Uint64{}} }

// Inc adds one to the counter of labels.
func (v *CounterVec) Inc(labels string) {
	v.mu.Lock()
	c := v.m[labels]
	if c == nil {
		c = new(atomic.Uint64)
		v.m[labels] = c
	}
	v.mu.Unlock()
	c.Add(1)
}

// Write writes every counter of v as family, sorted by labels.
func (v *CounterVec) Write(w *Writer, family, help string) {
	v.mu.Lock()
	keys := make([]string, 0, len(v.m))
	vals := map[string]uint64{}
	for k, c := range v.m {
		keys = append(keys, k)
		vals[k] = c.Load()
	}
	v.mu.Unlock()
	slices.Sort(keys)
	w.Declare(family, Counter, help)
	for _, k := range keys {
		w.Sample(family, k, float64(vals[k]))
	}
}
