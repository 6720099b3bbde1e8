package cron

import (
	"testing"
	"time"
)

// BenchmarkNext measures one schedule step in a DST zone, for a busy
// schedule and a sparse one (the CronJob controller calls Next once per
// sync, plus once per missed run it walks).
func BenchmarkNext(b *testing.B) {
	tz := "America/New_York"
	loc, err := LoadLocation(&tz)
	if err != nil {
		b.Fatal(err)
	}
	from := time.Date(2026, 3, 8, 0, 30, 0, 0, loc)
	for _, spec := range []string{"*/5 * * * *", "30 2 29 2 *"} {
		s, err := Parse(spec)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(spec, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				s.Next(from)
			}
		})
	}
}
