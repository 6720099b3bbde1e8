// Package promtext writes the Prometheus text exposition format (0.0.4)
// the way scrapers and histogram_quantile expect it: every family once,
// with # HELP and # TYPE before its samples, and classic histograms with
// cumulative `le` buckets, a +Inf bucket, _sum and _count.
//
// It holds the Histogram (fixed bounds, lock-free Observe) that skiff's
// latency figures use, an Annotate filter that adds metadata to the
// process and Go runtime figures of VictoriaMetrics/metrics, and Check,
// the parser tests run over every /metrics skiff serves. It has no
// globals and registers nothing.
package promtext
