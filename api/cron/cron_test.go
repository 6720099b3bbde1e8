package cron

import (
	"testing"
	"time"
)

func mustLoc(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := LoadLocation(&name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func TestParseErrors(t *testing.T) {
	for _, spec := range []string{"", "* * * *", "60 * * * *", "* 24 * * *", "* * 0 * *", "* * * 13 *", "* * * * 8",
		"*/0 * * * *", "5-1 * * * *", "@often", "TZ=UTC * * * * *", "a * * * *", "* * * * * *"} {
		if _, err := Parse(spec); err == nil {
			t.Errorf("Parse(%q) = nil error; want one", spec)
		}
	}
	for _, spec := range []string{"* * * * *", "*/5 * * * *", "0 0 1 1 *", "0 9-17/2 * * mon-fri", "@hourly", "@DAILY",
		"0 0 ? * 7", "5,10,15 1 * jan,jul sun", "30/10 * * * *"} {
		if _, err := Parse(spec); err != nil {
			t.Errorf("Parse(%q) = %v; want nil", spec, err)
		}
	}
}

func TestNext(t *testing.T) {
	utc := time.UTC
	at := func(s string) time.Time {
		v, err := time.ParseInLocation("2006-01-02 15:04", s, utc)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	tests := []struct{ spec, from, want string }{
		{"* * * * *", "2026-03-01 10:00", "2026-03-01 10:01"},
		{"*/15 * * * *", "2026-03-01 10:07", "2026-03-01 10:15"},
		{"0 0 * * *", "2026-12-31 23:59", "2027-01-01 00:00"},
		{"@monthly", "2026-01-31 00:00", "2026-02-01 00:00"},
		{"0 0 29 2 *", "2026-03-01 00:00", "2028-02-29 00:00"},
		{"0 12 * * mon", "2026-03-01 00:00", "2026-03-02 12:00"}, // 1 March 2026 is a Sunday
		{"0 0 13 * fri", "2026-03-01 00:00", "2026-03-06 00:00"}, // either day field matches
		{"0 0 * * 7", "2026-03-02 00:00", "2026-03-08 00:00"},
		{"30/10 * * * *", "2026-03-01 10:45", "2026-03-01 10:50"},
	}
	for _, tt := range tests {
		s, err := Parse(tt.spec)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Next(at(tt.from)); !got.Equal(at(tt.want)) {
			t.Errorf("Parse(%q).Next(%s) = %s; want %s", tt.spec, tt.from, got, tt.want)
		}
	}
	never, _ := Parse("0 0 30 2 *")
	if got := never.Next(at("2026-01-01 00:00")); !got.IsZero() {
		t.Errorf("30 February fires at %s; want never", got)
	}
}

// TestNextAcrossDST follows New York through both changes of 2026: on 8
// March 02:00 EST becomes 03:00 EDT, on 1 November 02:00 EDT becomes
// 01:00 EST.
func TestNextAcrossDST(t *testing.T) {
	ny := mustLoc(t, "America/New_York")
	run := func(spec string, from time.Time, n int) []string {
		s, err := Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for range n {
			from = s.Next(from)
			out = append(out, from.Format("01-02 15:04 MST"))
		}
		return out
	}
	tests := []struct {
		spec string
		from time.Time
		want []string
	}{
		// 02:30 does not exist on 8 March: that day is skipped.
		{"30 2 * * *", time.Date(2026, 3, 6, 12, 0, 0, 0, ny), []string{"03-07 02:30 EST", "03-09 02:30 EDT"}},
		// Hourly runs: the missing hour is simply absent.
		{"0 * * * *", time.Date(2026, 3, 8, 0, 30, 0, 0, ny), []string{"03-08 01:00 EST", "03-08 03:00 EDT", "03-08 04:00 EDT"}},
		// 01:30 happens twice on 1 November, and fires twice.
		{"30 1 * * *", time.Date(2026, 10, 31, 12, 0, 0, 0, ny), []string{"10-31 01:30 EDT", "11-01 01:30 EDT", "11-01 01:30 EST", "11-02 01:30 EST"}[1:]},
		// Daily at midnight keeps local midnight across both changes.
		{"@daily", time.Date(2026, 3, 7, 12, 0, 0, 0, ny), []string{"03-08 00:00 EST", "03-09 00:00 EDT"}},
		{"@daily", time.Date(2026, 10, 31, 12, 0, 0, 0, ny), []string{"11-01 00:00 EDT", "11-02 00:00 EST"}},
	}
	for _, tt := range tests {
		got := run(tt.spec, tt.from, len(tt.want))
		for i := range got {
			if got[i] != tt.want[i] {
				t.Errorf("%q from %s = %v; want %v", tt.spec, tt.from.Format(time.RFC3339), got, tt.want)
				break
			}
		}
	}
}

func TestLoadLocation(t *testing.T) {
	if loc, err := LoadLocation(nil); err != nil || loc != time.Local {
		t.Errorf("LoadLocation(nil) = %v, %v; want Local", loc, err)
	}
	for _, bad := range []string{"Mars/Olympus", "Local", "../etc/passwd"} {
		if _, err := LoadLocation(&bad); err == nil {
			t.Errorf("LoadLocation(%q) = nil error; want one", bad)
		}
	}
	mustLoc(t, "Europe/Berlin")
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"* * * * *", "@daily", "1-5/2 */3 1,15 jan-mar mon-fri", "0 0 30 2 *"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		s, err := Parse(spec)
		if err != nil {
			return
		}
		from := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		if n := s.Next(from); !n.IsZero() && !n.After(from) {
			t.Fatalf("Parse(%q).Next(%s) = %s; not after", spec, from, n)
		}
	})
}
