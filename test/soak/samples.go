package soak

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// Sample is one reading of the soak's figures.
type Sample struct {
	At time.Duration // since the churn began
	// DBBytes and WALBytes are state.db and state.db-wal on disk.
	DBBytes, WALBytes int64
	// ServerRSS and AgentRSS are the processes' resident set, bytes.
	ServerRSS, AgentRSS int64
	// ServerGoroutines and AgentGoroutines come from their /metrics.
	ServerGoroutines, AgentGoroutines int
	// Created and Deleted count the churned pods so far.
	Created, Deleted int
	// Pods are the pods the API holds.
	Pods int
	// Containers run on the agent.
	Containers int
	// Shims are the containerd shim processes of the agent's containerd
	// (one per pod; a shim outliving its pod would be a leak of ~13 MiB).
	Shims int
}

// Column is one figure of a Sample, by name, as the CSV and the summary
// print it.
type Column struct {
	Name string
	Unit string
	Get  func(Sample) float64
}

const mib = 1 << 20

// Columns are the figures, in CSV order.
var Columns = []Column{
	{"db_mib", "MiB", func(s Sample) float64 { return float64(s.DBBytes) / mib }},
	{"wal_mib", "MiB", func(s Sample) float64 { return float64(s.WALBytes) / mib }},
	{"server_rss_mib", "MiB", func(s Sample) float64 { return float64(s.ServerRSS) / mib }},
	{"agent_rss_mib", "MiB", func(s Sample) float64 { return float64(s.AgentRSS) / mib }},
	{"server_goroutines", "", func(s Sample) float64 { return float64(s.ServerGoroutines) }},
	{"agent_goroutines", "", func(s Sample) float64 { return float64(s.AgentGoroutines) }},
	{"pods", "", func(s Sample) float64 { return float64(s.Pods) }},
	{"containers", "", func(s Sample) float64 { return float64(s.Containers) }},
	{"shims", "", func(s Sample) float64 { return float64(s.Shims) }},
	{"created", "", func(s Sample) float64 { return float64(s.Created) }},
	{"deleted", "", func(s Sample) float64 { return float64(s.Deleted) }},
}

// WriteCSV writes the samples with a header row; the first column is
// the time in seconds.
func WriteCSV(w io.Writer, samples []Sample) error {
	cw := csv.NewWriter(w)
	head := []string{"seconds"}
	for _, c := range Columns {
		head = append(head, c.Name)
	}
	if err := cw.Write(head); err != nil {
		return fmt.Errorf("write csv: %w", err)
	}
	for _, s := range samples {
		row := []string{strconv.FormatFloat(s.At.Seconds(), 'f', 1, 64)}
		for _, c := range Columns {
			row = append(row, strconv.FormatFloat(c.Get(s), 'f', 3, 64))
		}
		if err := cw.Write(row); err != nil {
			return fmt.Errorf("write csv: %w", err)
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("write csv: %w", err)
	}
	return nil
}

// Stat summarises one figure over a run.
type Stat struct {
	Name                 string
	Start, End, Min, Max float64
	// SlopePerHour is the least-squares slope after the warm-up, per
	// hour.
	SlopePerHour float64
}

// Warmup is the share of a run left out of the slope: caches, the
// SQLite page cache and the Go heap settle in it.
const Warmup = 0.1

// Summarise computes each figure's Stat; Start is the first sample
// after the warm-up.
func Summarise(samples []Sample) []Stat {
	if len(samples) == 0 {
		return nil
	}
	from := int(float64(len(samples)) * Warmup)
	var out []Stat
	for _, c := range Columns {
		st := Stat{Name: c.Name, Start: c.Get(samples[from]), End: c.Get(samples[len(samples)-1]), Min: math.Inf(1), Max: math.Inf(-1)}
		var xs, ys []float64
		for i, s := range samples {
			v := c.Get(s)
			st.Min, st.Max = math.Min(st.Min, v), math.Max(st.Max, v)
			if i >= from {
				xs, ys = append(xs, s.At.Hours()), append(ys, v)
			}
		}
		st.SlopePerHour = slope(xs, ys)
		out = append(out, st)
	}
	return out
}

// slope is the least-squares slope of ys over xs (0 with fewer than two
// distinct xs).
func slope(xs, ys []float64) float64 {
	n := float64(len(xs))
	if n < 2 {
		return 0
	}
	var sx, sy, sxx, sxy float64
	for i := range xs {
		sx += xs[i]
		sy += ys[i]
		sxx += xs[i] * xs[i]
		sxy += xs[i] * ys[i]
	}
	d := n*sxx - sx*sx
	if d == 0 {
		return 0
	}
	return (n*sxy - sx*sy) / d
}

// FormatSummary prints the stats as an aligned table.
func FormatSummary(stats []Stat) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-18s %10s %10s %10s %10s %12s\n", "figure", "start", "end", "min", "max", "slope/hour")
	for _, s := range stats {
		fmt.Fprintf(&b, "%-18s %10.2f %10.2f %10.2f %10.2f %12.2f\n", s.Name, s.Start, s.End, s.Min, s.Max, s.SlopePerHour)
	}
	return b.String()
}

// Charts are the soak's panels: storage, memory, goroutines and the
// churn itself, over minutes.
func Charts(samples []Sample) []Chart {
	x := make([]float64, len(samples))
	for i, s := range samples {
		x[i] = s.At.Minutes()
	}
	col := func(name string) []float64 {
		for _, c := range Columns {
			if c.Name == name {
				v := make([]float64, len(samples))
				for i, s := range samples {
					v[i] = c.Get(s)
				}
				return v
			}
		}
		return nil
	}
	const xl = "minutes"
	return []Chart{
		{Title: "SQLite MiB", XLabel: xl, X: x, Series: []Series{{Name: "db", Y: col("db_mib")}, {Name: "wal", Y: col("wal_mib")}}},
		{Title: "RSS MiB", XLabel: xl, X: x, Series: []Series{{Name: "server", Y: col("server_rss_mib")}, {Name: "agent", Y: col("agent_rss_mib")}}},
		{Title: "goroutines", XLabel: xl, X: x, Series: []Series{{Name: "server", Y: col("server_goroutines")}, {Name: "agent", Y: col("agent_goroutines")}}},
		{Title: "pods", XLabel: xl, X: x, Series: []Series{{Name: "api", Y: col("pods")}, {Name: "running", Y: col("containers")}, {Name: "shims", Y: col("shims")}}},
	}
}

// growthSlack is the absolute growth Growth forgives per figure, on top
// of 25 %: a few MiB of heap or page cache, a few dozen goroutines of
// pods that happen to be starting.
var growthSlack = map[string]float64{
	"db_mib": 2, "wal_mib": 4, "server_rss_mib": 8, "agent_rss_mib": 8,
	"server_goroutines": 25, "agent_goroutines": 40, "shims": 20,
}

// Growth compares each storage, memory and goroutine figure's mean over
// the last quarter of the run with its mean over the second quarter, and
// describes each that grew by more than 25 % plus its slack: what a leak
// looks like, where a plateau does not.
func Growth(samples []Sample) []string {
	n := len(samples)
	if n < 8 {
		return nil
	}
	mean := func(c Column, from, to int) float64 {
		sum := 0.0
		for _, s := range samples[from:to] {
			sum += c.Get(s)
		}
		return sum / float64(to-from)
	}
	var out []string
	for _, c := range Columns {
		slack, ok := growthSlack[c.Name]
		if !ok {
			continue
		}
		mid, last := mean(c, n/4, n/2), mean(c, n-n/4, n)
		if last > 1.25*mid+slack {
			out = append(out, fmt.Sprintf("%s grew: mean %.1f over the second quarter, %.1f over the last", c.Name, mid, last))
		}
	}
	return out
}
