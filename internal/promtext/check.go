package promtext

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// sample is one parsed sample line.
type sample struct {
	name   string
	labels [][2]string
	value  float64
	line   int
}

func (s sample) label(k string) (string, bool) {
	for _, kv := range s.labels {
		if kv[0] == k {
			return kv[1], true
		}
	}
	return "", false
}

// labelsWithout renders s's labels less the named one, as a map key.
func (s sample) labelsWithout(skip string) string {
	var parts []string
	for _, kv := range s.labels {
		if kv[0] != skip {
			parts = append(parts, kv[0]+"="+strconv.Quote(kv[1]))
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// parseSample parses `name{k="v",...} value [timestamp]`.
func parseSample(line string, n int) (sample, error) {
	s := sample{line: n}
	i := strings.IndexAny(line, "{ ")
	if i <= 0 {
		return s, fmt.Errorf("line %d: no metric name or value: %q", n, line)
	}
	s.name = line[:i]
	if !validName(s.name) {
		return s, fmt.Errorf("line %d: invalid metric name %q", n, s.name)
	}
	rest := line[i:]
	if rest[0] == '{' {
		rest = rest[1:]
		for {
			rest = strings.TrimLeft(rest, " ")
			if strings.HasPrefix(rest, "}") {
				rest = rest[1:]
				break
			}
			eq := strings.IndexByte(rest, '=')
			if eq <= 0 || len(rest) < eq+2 || rest[eq+1] != '"' {
				return s, fmt.Errorf("line %d: bad label in %q", n, line)
			}
			key := rest[:eq]
			if !validName(key) {
				return s, fmt.Errorf("line %d: invalid label name %q", n, key)
			}
			rest = rest[eq+2:]
			var val strings.Builder
			closed := false
			for j := 0; j < len(rest); j++ {
				c := rest[j]
				if c == '\\' && j+1 < len(rest) {
					j++
					switch rest[j] {
					case 'n':
						val.WriteByte('\n')
					default:
						val.WriteByte(rest[j])
					}
					continue
				}
				if c == '"' {
					rest, closed = rest[j+1:], true
					break
				}
				val.WriteByte(c)
			}
			if !closed {
				return s, fmt.Errorf("line %d: unterminated label value in %q", n, line)
			}
			s.labels = append(s.labels, [2]string{key, val.String()})
			rest = strings.TrimPrefix(rest, ",")
		}
	}
	f := strings.Fields(rest)
	if len(f) < 1 || len(f) > 2 {
		return s, fmt.Errorf("line %d: want a value (and a timestamp) after the name: %q", n, line)
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return s, fmt.Errorf("line %d: value %q: %w", n, f[0], err)
	}
	s.value = v
	return s, nil
}

func validName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		ok := c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9'
		if !ok {
			return false
		}
	}
	return true
}

type family struct {
	help, typ bool
	t         Type
	samples   []sample
}

// Check parses a text exposition and reports what a strict scraper or
// histogram_quantile would trip on: a sample whose family has no # HELP
// or # TYPE before it, a family declared twice or whose samples are not
// together, a bad line, and histograms without ascending cumulative le
// buckets, a +Inf bucket equal to _count, or a _sum. It returns every
// problem found, joined.
func Check(text []byte) error {
	var errs []error
	fams := map[string]*family{}
	var current string
	closed := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(text))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		if strings.TrimSpace(line) == "" {
			continue
		}
		if strings.HasPrefix(line, "#") {
			f := strings.Fields(line)
			if len(f) < 3 || (f[1] != "HELP" && f[1] != "TYPE") {
				continue // a comment
			}
			name := f[2]
			fam := fams[name]
			if fam == nil {
				fam = &family{}
				fams[name] = fam
			}
			if len(fam.samples) > 0 {
				errs = append(errs, fmt.Errorf("line %d: # %s %s after its samples", n, f[1], name))
			}
			switch f[1] {
			case "HELP":
				if fam.help {
					errs = append(errs, fmt.Errorf("line %d: second # HELP for %s", n, name))
				}
				fam.help = true
			case "TYPE":
				if fam.typ {
					errs = append(errs, fmt.Errorf("line %d: second # TYPE for %s", n, name))
				}
				if len(f) != 4 {
					errs = append(errs, fmt.Errorf("line %d: # TYPE %s without a type", n, name))
					continue
				}
				fam.typ, fam.t = true, Type(f[3])
			}
			continue
		}
		s, err := parseSample(line, n)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		name := familyOf(s.name, fams)
		fam := fams[name]
		if fam == nil || !fam.help || !fam.typ {
			errs = append(errs, fmt.Errorf("line %d: sample %s has no # HELP and # TYPE for family %s before it", n, s.name, name))
			if fam == nil {
				fam = &family{}
				fams[name] = fam
			}
		}
		if name != current {
			if closed[name] {
				errs = append(errs, fmt.Errorf("line %d: samples of %s are not together", n, name))
			}
			closed[current] = true
			current = name
		}
		fam.samples = append(fam.samples, s)
	}
	if err := sc.Err(); err != nil {
		errs = append(errs, err)
	}
	names := make([]string, 0, len(fams))
	for name := range fams {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if fams[name].t == Histogram {
			errs = append(errs, checkHistogram(name, fams[name].samples)...)
		}
	}
	return errors.Join(errs...)
}

// familyOf maps a sample name to its family: itself, or for the
// _bucket, _sum and _count series the histogram or summary declared.
func familyOf(name string, fams map[string]*family) string {
	if f := fams[name]; f != nil && f.typ {
		return name
	}
	for _, suf := range []string{"_bucket", "_sum", "_count"} {
		base, ok := strings.CutSuffix(name, suf)
		if !ok {
			continue
		}
		if f := fams[base]; f != nil && (f.t == Histogram || f.t == Summary && suf != "_bucket") {
			return base
		}
	}
	return name
}

type histSeries struct {
	les            []float64
	counts         []float64
	inf            float64
	hasInf, hasSum bool
	count          float64
	hasCount       bool
}

func checkHistogram(name string, samples []sample) []error {
	var errs []error
	series := map[string]*histSeries{}
	get := func(k string) *histSeries {
		if series[k] == nil {
			series[k] = &histSeries{}
		}
		return series[k]
	}
	for _, s := range samples {
		switch s.name {
		case name + "_bucket":
			le, ok := s.label("le")
			if !ok {
				errs = append(errs, fmt.Errorf("line %d: %s_bucket without le", s.line, name))
				continue
			}
			h := get(s.labelsWithout("le"))
			if le == "+Inf" {
				h.inf, h.hasInf = s.value, true
				continue
			}
			b, err := strconv.ParseFloat(le, 64)
			if err != nil || math.IsNaN(b) {
				errs = append(errs, fmt.Errorf("line %d: %s le=%q is not a number", s.line, name, le))
				continue
			}
			h.les, h.counts = append(h.les, b), append(h.counts, s.value)
		case name + "_sum":
			get(s.labelsWithout("")).hasSum = true
		case name + "_count":
			h := get(s.labelsWithout(""))
			h.count, h.hasCount = s.value, true
		default:
			errs = append(errs, fmt.Errorf("line %d: %s in histogram %s", s.line, s.name, name))
		}
	}
	for k, h := range series {
		where := name + "{" + k + "}"
		if len(h.les) == 0 {
			errs = append(errs, fmt.Errorf("%s: no le buckets", where))
		}
		for i := 1; i < len(h.les); i++ {
			if h.les[i] <= h.les[i-1] || h.counts[i] < h.counts[i-1] {
				errs = append(errs, fmt.Errorf("%s: buckets not ascending and cumulative at le=%g", where, h.les[i]))
			}
		}
		switch {
		case !h.hasInf:
			errs = append(errs, fmt.Errorf("%s: no +Inf bucket", where))
		case len(h.counts) > 0 && h.inf < h.counts[len(h.counts)-1]:
			errs = append(errs, fmt.Errorf("%s: +Inf bucket below the last", where))
		}
		if !h.hasSum {
			errs = append(errs, fmt.Errorf("%s: no _sum", where))
		}
		if !h.hasCount {
			errs = append(errs, fmt.Errorf("%s: no _count", where))
		} else if h.hasInf && h.count != h.inf {
			errs = append(errs, fmt.Errorf("%s: _count %g != +Inf bucket %g", where, h.count, h.inf))
		}
	}
	return errs
}
