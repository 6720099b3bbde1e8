package table

import (
	"testing"
	"time"
)

func TestHumanDuration(t *testing.T) {
	const day = 24 * time.Hour
	tests := []struct {
		d    time.Duration
		want string
	}{
		{-2 * time.Second, "<invalid>"},
		{-1500 * time.Millisecond, "0s"},
		{0, "0s"},
		{5 * time.Second, "5s"},
		{119 * time.Second, "119s"},
		{2 * time.Minute, "2m"},
		{3*time.Minute + 20*time.Second, "3m20s"},
		{9*time.Minute + 59*time.Second, "9m59s"},
		{10 * time.Minute, "10m"},
		{179 * time.Minute, "179m"},
		{3 * time.Hour, "3h"},
		{5*time.Hour + 3*time.Minute, "5h3m"},
		{8 * time.Hour, "8h"},
		{47 * time.Hour, "47h"},
		{2*day + 3*time.Hour, "2d3h"},
		{7 * day, "7d"},
		{8 * day, "8d"},
		{45 * day, "45d"},
		{729 * day, "729d"},
		{730 * day, "2y"},
		{(3*365 + 120) * day, "3y120d"},
		{8 * 365 * day, "8y"},
		{20 * 365 * day, "20y"},
	}
	for _, tc := range tests {
		if got := HumanDuration(tc.d); got != tc.want {
			t.Errorf("HumanDuration(%v) = %q; want %q", tc.d, got, tc.want)
		}
	}
}

func TestAge(t *testing.T) {
	if got := Age(time.Time{}, now); got != "<unknown>" {
		t.Errorf("Age(zero) = %q; want <unknown>", got)
	}
	if got := Age(now.Add(-90*time.Second), now); got != "90s" {
		t.Errorf("Age(90s ago) = %q; want 90s", got)
	}
}
