package cron

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Schedule is a parsed schedule. The zero value never fires.
type Schedule struct {
	minute, hour, dom, month, dow uint64 // bit i set: value i matches
	domStar, dowStar              bool   // the field was * or ?
}

// ErrSchedule is wrapped by every parse error.
var ErrSchedule = errors.New("invalid schedule")

var macros = map[string]string{
	"@yearly":   "0 0 1 1 *",
	"@annually": "0 0 1 1 *",
	"@monthly":  "0 0 1 * *",
	"@weekly":   "0 0 * * 0",
	"@daily":    "0 0 * * *",
	"@midnight": "0 0 * * *",
	"@hourly":   "0 * * * *",
}

var monthNames = map[string]int{"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6, "jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12}
var dowNames = map[string]int{"sun": 0, "mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6}

// Parse parses a five-field schedule or a macro. Fields take *, ?, a
// value, a range a-b, a step (*/n, a-b/n, a/n) and comma lists; months
// and weekdays also take names (jan, mon); weekday 7 is Sunday.
func Parse(spec string) (Schedule, error) {
	s := strings.TrimSpace(spec)
	if strings.HasPrefix(s, "TZ=") || strings.HasPrefix(s, "CRON_TZ=") {
		return Schedule{}, fmt.Errorf("%w: TZ and CRON_TZ are not allowed in the schedule; use timeZone", ErrSchedule)
	}
	if strings.HasPrefix(s, "@") {
		m, ok := macros[strings.ToLower(s)]
		if !ok {
			return Schedule{}, fmt.Errorf("%w: unknown macro %q", ErrSchedule, s)
		}
		s = m
	}
	f := strings.Fields(s)
	if len(f) != 5 {
		return Schedule{}, fmt.Errorf("%w: expected 5 fields (minute hour day-of-month month day-of-week), found %d in %q", ErrSchedule, len(f), spec)
	}
	var sch Schedule
	var err error
	if sch.minute, err = parseField(f[0], 0, 59, nil); err != nil {
		return Schedule{}, fmt.Errorf("%w: minute: %w", ErrSchedule, err)
	}
	if sch.hour, err = parseField(f[1], 0, 23, nil); err != nil {
		return Schedule{}, fmt.Errorf("%w: hour: %w", ErrSchedule, err)
	}
	if sch.dom, err = parseField(f[2], 1, 31, nil); err != nil {
		return Schedule{}, fmt.Errorf("%w: day of month: %w", ErrSchedule, err)
	}
	if sch.month, err = parseField(f[3], 1, 12, monthNames); err != nil {
		return Schedule{}, fmt.Errorf("%w: month: %w", ErrSchedule, err)
	}
	if sch.dow, err = parseField(f[4], 0, 7, dowNames); err != nil {
		return Schedule{}, fmt.Errorf("%w: day of week: %w", ErrSchedule, err)
	}
	if sch.dow&(1<<7) != 0 {
		sch.dow |= 1 // 7 is Sunday too
	}
	sch.domStar = f[2] == "*" || f[2] == "?"
	sch.dowStar = f[4] == "*" || f[4] == "?"
	return sch, nil
}

func parseField(field string, lo, hi int, names map[string]int) (uint64, error) {
	var bits uint64
	for part := range strings.SplitSeq(field, ",") {
		b, err := parseRange(part, lo, hi, names)
		if err != nil {
			return 0, err
		}
		bits |= b
	}
	return bits, nil
}

func parseRange(part string, lo, hi int, names map[string]int) (uint64, error) {
	rng, stepText, hasStep := strings.Cut(part, "/")
	step := 1
	if hasStep {
		n, err := strconv.Atoi(stepText)
		if err != nil || n <= 0 {
			return 0, fmt.Errorf("bad step %q", stepText)
		}
		step = n
	}
	start, end := lo, hi
	switch {
	case rng == "*" || rng == "?":
	default:
		a, b, isRange := strings.Cut(rng, "-")
		var err error
		if start, err = parseValue(a, lo, hi, names); err != nil {
			return 0, err
		}
		end = start
		if isRange {
			if end, err = parseValue(b, lo, hi, names); err != nil {
				return 0, err
			}
		} else if hasStep {
			end = hi // "a/n" means a, a+n, … up to the maximum
		}
		if end < start {
			return 0, fmt.Errorf("range %q runs backwards", rng)
		}
	}
	var bits uint64
	for v := start; v <= end; v += step {
		bits |= 1 << uint(v)
	}
	return bits, nil
}

func parseValue(s string, lo, hi int, names map[string]int) (int, error) {
	if v, ok := names[strings.ToLower(s)]; ok {
		return v, nil
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("bad value %q", s)
	}
	if v < lo || v > hi {
		return 0, fmt.Errorf("value %d out of range [%d, %d]", v, lo, hi)
	}
	return v, nil
}

func has(bits uint64, v int) bool { return bits&(1<<uint(v)) != 0 }

// dayMatches applies cron's day rule: when both day fields are
// restricted, either may match; otherwise both must.
func (s Schedule) dayMatches(t time.Time) bool {
	dom, dow := has(s.dom, t.Day()), has(s.dow, int(t.Weekday()))
	if !s.domStar && !s.dowStar {
		return dom || dow
	}
	return dom && dow
}

// searchYears bounds Next's search: a schedule that does not fire within
// this many years (say 30 February) never does.
const searchYears = 5

// Next returns the first time after t that s fires, in t's location, or
// the zero time when it never does. Across a daylight-saving change it
// behaves like robfig/cron, which Kubernetes uses: a wall time that does
// not exist (spring forward) is skipped, and one that happens twice
// (fall back) fires twice.
func (s Schedule) Next(t time.Time) time.Time {
	if s.minute == 0 {
		return time.Time{}
	}
	loc := t.Location()
	t = t.Truncate(time.Minute).Add(time.Minute)
	limit := t.Year() + searchYears
	reset := false // a field moved: lower fields start from their minimum
wrap:
	if t.Year() > limit {
		return time.Time{}
	}
	for !has(s.month, int(t.Month())) {
		if !reset {
			reset = true
			t = time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, loc)
		}
		t = t.AddDate(0, 1, 0)
		if t.Month() == time.January {
			goto wrap
		}
	}
	for !s.dayMatches(t) {
		if !reset {
			reset = true
			t = time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, loc)
		}
		t = t.AddDate(0, 0, 1)
		// Midnight may not exist (or be doubled) on a DST day: snap
		// back to the start of the day.
		if h := t.Hour(); h != 0 {
			if h > 12 {
				t = t.Add(time.Duration(24-h) * time.Hour)
			} else {
				t = t.Add(-time.Duration(h) * time.Hour)
			}
		}
		if t.Day() == 1 {
			goto wrap
		}
	}
	for !has(s.hour, t.Hour()) {
		if !reset {
			reset = true
			t = time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), 0, 0, 0, loc)
		}
		t = t.Add(time.Hour)
		if t.Hour() == 0 {
			goto wrap
		}
	}
	for !has(s.minute, t.Minute()) {
		if !reset {
			reset = true
		}
		t = t.Add(time.Minute)
		if t.Minute() == 0 {
			goto wrap
		}
	}
	return t
}
