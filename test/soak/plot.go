package soak

import (
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"math"
)

// Series is one line of a chart.
type Series struct {
	Name  string
	Y     []float64
	Color color.RGBA
}

// Chart is one panel: lines over a shared x axis, y from 0.
type Chart struct {
	Title  string
	XLabel string
	X      []float64
	Series []Series
}

// Panel geometry, in pixels.
const (
	panelW, panelH = 440, 270
	marginL        = 64
	marginR        = 14
	marginT        = 26
	marginB        = 40
)

var (
	white = color.RGBA{255, 255, 255, 255}
	black = color.RGBA{0, 0, 0, 255}
	grid  = color.RGBA{225, 225, 225, 255}
	// Palette colours successive series.
	Palette = []color.RGBA{{31, 119, 180, 255}, {214, 39, 40, 255}, {44, 160, 44, 255}, {148, 103, 189, 255}}
)

// Render draws the charts in a grid of cols columns.
func Render(charts []Chart, cols int) *image.RGBA {
	rows := (len(charts) + cols - 1) / cols
	img := image.NewRGBA(image.Rect(0, 0, cols*panelW, rows*panelH))
	draw.Draw(img, img.Bounds(), &image.Uniform{white}, image.Point{}, draw.Src)
	for i, c := range charts {
		drawChart(img, image.Pt((i%cols)*panelW, (i/cols)*panelH), c)
	}
	return img
}

func drawChart(img *image.RGBA, o image.Point, c Chart) {
	x0, y0 := o.X+marginL, o.Y+panelH-marginB // the plot's origin
	w, h := panelW-marginL-marginR, panelH-marginT-marginB
	drawText(img, o.X+marginL, o.Y+6, c.Title, black)
	xmin, xmax := rangeOf(c.X)
	if xmax <= xmin {
		xmax = xmin + 1
	}
	ymax := 0.0
	for _, s := range c.Series {
		_, m := rangeOf(s.Y)
		ymax = max(ymax, m)
	}
	ystep := niceStep(ymax / 4)
	ytop := math.Max(ystep*math.Ceil(ymax/ystep), ystep)
	for v := 0.0; v <= ytop+ystep/2; v += ystep {
		py := y0 - int(v/ytop*float64(h))
		hline(img, x0, x0+w, py, grid)
		label := formatTick(v)
		drawText(img, x0-6-textWidth(label), py-glyphH/2, label, black)
	}
	xstep := niceStep((xmax - xmin) / 5)
	for v := math.Ceil(xmin/xstep) * xstep; v <= xmax+xstep/1e6; v += xstep {
		px := x0 + int((v-xmin)/(xmax-xmin)*float64(w))
		vline(img, px, y0-h, y0, grid)
		label := formatTick(v)
		drawText(img, px-textWidth(label)/2, y0+6, label, black)
	}
	drawText(img, x0+w/2-textWidth(c.XLabel)/2, y0+20, c.XLabel, black)
	hline(img, x0, x0+w, y0, black)
	vline(img, x0, y0-h, y0, black)
	lx := x0 + w
	for i, s := range c.Series {
		col := s.Color
		if col.A == 0 {
			col = Palette[i%len(Palette)]
		}
		for j := 1; j < len(s.Y) && j < len(c.X); j++ {
			px := func(k int) (int, int) {
				return x0 + int((c.X[k]-xmin)/(xmax-xmin)*float64(w)), y0 - int(s.Y[k]/ytop*float64(h))
			}
			ax, ay := px(j - 1)
			bx, by := px(j)
			line(img, ax, ay, bx, by, col)
			line(img, ax, ay-1, bx, by-1, col)
		}
		// The legend, right-aligned in the title row.
		lx -= textWidth(s.Name) + 16
		fill(img, image.Rect(lx, o.Y+7, lx+10, o.Y+13), col)
		drawText(img, lx+13, o.Y+6, s.Name, col)
	}
}

func rangeOf(v []float64) (lo, hi float64) {
	if len(v) == 0 {
		return 0, 0
	}
	lo, hi = v[0], v[0]
	for _, x := range v {
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	return lo, hi
}

// niceStep rounds raw up to 1, 2 or 5 times a power of ten.
func niceStep(raw float64) float64 {
	if raw <= 0 || math.IsNaN(raw) || math.IsInf(raw, 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

func formatTick(v float64) string {
	switch {
	case v == math.Trunc(v) && math.Abs(v) < 1e7:
		return fmt.Sprintf("%.0f", v)
	case math.Abs(v) >= 1:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2g", v)
	}
}

func hline(img *image.RGBA, x1, x2, y int, c color.Color) {
	for x := x1; x <= x2; x++ {
		img.Set(x, y, c)
	}
}

func vline(img *image.RGBA, x, y1, y2 int, c color.Color) {
	for y := y1; y <= y2; y++ {
		img.Set(x, y, c)
	}
}

func fill(img *image.RGBA, r image.Rectangle, c color.Color) {
	draw.Draw(img, r, &image.Uniform{c}, image.Point{}, draw.Src)
}

// line draws from (x1, y1) to (x2, y2) (Bresenham).
func line(img *image.RGBA, x1, y1, x2, y2 int, c color.Color) {
	dx, dy := abs(x2-x1), -abs(y2-y1)
	sx, sy := sign(x2-x1), sign(y2-y1)
	e := dx + dy
	for {
		img.Set(x1, y1, c)
		if x1 == x2 && y1 == y2 {
			return
		}
		e2 := 2 * e
		if e2 >= dy {
			e += dy
			x1 += sx
		}
		if e2 <= dx {
			e += dx
			y1 += sy
		}
	}
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

func sign(v int) int {
	switch {
	case v < 0:
		return -1
	case v > 0:
		return 1
	}
	return 0
}
