// Package cron parses CronJob schedules — five fields (minute, hour, day
// of month, month, day of week) or a macro (@hourly, @daily, …) — and
// computes the times they fire, in any time zone, across daylight-saving
// changes the way Kubernetes' CronJob controller (robfig/cron) does. It
// is pure computation: no clock, no goroutines; it depends on nothing of
// skiff's.
package cron
