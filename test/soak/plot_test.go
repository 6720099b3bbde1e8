package soak

import (
	"bytes"
	"image/png"
	"math"
	"strings"
	"testing"
	"time"
)

func ramp(n int, f func(i int) Sample) []Sample {
	out := make([]Sample, n)
	for i := range out {
		out[i] = f(i)
		out[i].At = time.Duration(i) * time.Minute
	}
	return out
}

func TestSummariseSlope(t *testing.T) {
	// RSS grows 1 MiB a minute: 60 MiB an hour.
	s := ramp(60, func(i int) Sample { return Sample{ServerRSS: int64(100+i) << 20, AgentGoroutines: 50} })
	for _, st := range Summarise(s) {
		switch st.Name {
		case "server_rss_mib":
			if math.Abs(st.SlopePerHour-60) > 0.01 || st.Max != 159 || st.End != 159 || st.Start != 106 {
				t.Errorf("server_rss_mib = %+v; want slope 60/h, start 106 (after the warm-up), end and max 159", st)
			}
		case "agent_goroutines":
			if st.SlopePerHour != 0 || st.Min != 50 || st.Max != 50 {
				t.Errorf("agent_goroutines = %+v; want flat at 50", st)
			}
		}
	}
	if !strings.Contains(FormatSummary(Summarise(s)), "server_rss_mib") {
		t.Error("the summary table lacks a figure")
	}
}

func TestGrowthTellsALeakFromAPlateau(t *testing.T) {
	plateau := ramp(40, func(i int) Sample {
		rss := 100 + 10*math.Min(float64(i), 8) // warms up, then flat
		return Sample{AgentRSS: int64(rss) << 20, ServerGoroutines: 100 + i%7}
	})
	if g := Growth(plateau); len(g) != 0 {
		t.Errorf("Growth of a plateau = %q; want nothing", g)
	}
	leak := ramp(40, func(i int) Sample { return Sample{ServerGoroutines: 100 + 10*i} })
	g := Growth(leak)
	if len(g) != 1 || !strings.Contains(g[0], "server_goroutines grew") {
		t.Errorf("Growth of a goroutine leak = %q; want server_goroutines", g)
	}
	if Growth(leak[:5]) != nil {
		t.Error("Growth judged a run of 5 samples")
	}
}

func TestOutputs(t *testing.T) {
	s := ramp(30, func(i int) Sample {
		return Sample{DBBytes: int64(i) << 20, WALBytes: 4 << 20, ServerRSS: 60 << 20, AgentRSS: 50 << 20,
			ServerGoroutines: 100, AgentGoroutines: 200 + i, Pods: 50, Containers: 48, Created: 10 * i}
	})
	var csv bytes.Buffer
	if err := WriteCSV(&csv, s); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(csv.String()), "\n")
	if len(lines) != 31 || !strings.HasPrefix(lines[0], "seconds,db_mib,wal_mib,") || !strings.HasPrefix(lines[2], "60.0,1.000,4.000,") {
		t.Fatalf("csv = %d lines, %q, %q", len(lines), lines[0], lines[2])
	}
	img := Render(Charts(s), 2)
	if b := img.Bounds(); b.Dx() != 2*panelW || b.Dy() != 2*panelH {
		t.Fatalf("image %v", b)
	}
	// Each series leaves pixels of its colour; the text is black.
	counts := map[[3]uint8]int{}
	for y := 0; y < img.Bounds().Dy(); y++ {
		for x := 0; x < img.Bounds().Dx(); x++ {
			c := img.RGBAAt(x, y)
			counts[[3]uint8{c.R, c.G, c.B}]++
		}
	}
	for i, col := range Palette[:2] {
		if counts[[3]uint8{col.R, col.G, col.B}] < 200 {
			t.Errorf("series colour %d drew %d pixels", i, counts[[3]uint8{col.R, col.G, col.B}])
		}
	}
	if counts[[3]uint8{0, 0, 0}] < 1000 {
		t.Errorf("%d black pixels: axes and labels missing", counts[[3]uint8{0, 0, 0}])
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
}

func TestTextAndTicks(t *testing.T) {
	if textWidth("RSS MiB") != 7*glyphW {
		t.Errorf("textWidth = %d", textWidth("RSS MiB"))
	}
	for _, c := range "0123456789abcdefghijklmnopqrstuvwxyz.:-/%()" {
		if _, ok := glyphs[[]rune(strings.ToUpper(string(c)))[0]]; !ok {
			t.Errorf("no glyph for %q", c)
		}
	}
	for raw, want := range map[float64]float64{0.7: 1, 3: 5, 12: 20, 0: 1, 45: 50, 0.013: 0.02} {
		if got := niceStep(raw); math.Abs(got-want) > 1e-9 {
			t.Errorf("niceStep(%v) = %v; want %v", raw, got, want)
		}
	}
	if formatTick(2) != "2" || formatTick(2.5) != "2.5" || formatTick(0.25) != "0.25" {
		t.Errorf("ticks: %q %q %q", formatTick(2), formatTick(2.5), formatTick(0.25))
	}
}
