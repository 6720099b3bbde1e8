package resource

import (
	"math"
	"strings"
	"testing"
)

func TestCmp(t *testing.T) {
	tests := []struct {
		x, y string
		want int
	}{
		{"0", "0", 0},
		{"0", "0Ki", 0},
		{"0", "-0", 0},
		{"100m", "50m", 1},
		{"50m", "100m", -1},
		{"100m", "0.1", 0},
		{"1", "1000m", 0},
		{"1k", "1e3", 0},
		{"1k", "1000", 0},
		{"1Ki", "1024", 0},
		{"1Ki", "1k", 1},
		{"10000T", "100Gi", 1},
		{"1Gi", "1073741824", 0},
		{"1Gi", "1073741824000001n", 1},
		{"-1", "1", -1},
		{"-1", "-2", 1},
		{"-1n", "0", -1},
		{"1n", "0", 1},
		{"9223372036854775807", "9223372036854775808", -1},
		{"9223372036854775808", "9223372036854775808000m", 0},
		{"-9223372036854775809", "-9223372036854775808", -1},
		{"1e999", "1n", 1},
		{"-1e999", "-1n", -1},
		{"1e999", "1e998", 1},
		{"123456789012345678901234567890", "123456789012345678901234567891", -1},
		{"9223372036854775807", "9223372036854775807000000001n", -1},
		{"9223372036854775807", "9223372036854775807001n", 1},
	}
	for _, tt := range tests {
		x, y := MustParse(tt.x), MustParse(tt.y)
		if got := x.Cmp(y); got != tt.want {
			t.Errorf("Parse(%q).Cmp(Parse(%q)) = %d; want %d", tt.x, tt.y, got, tt.want)
		}
		if got := y.Cmp(x); got != -tt.want {
			t.Errorf("Parse(%q).Cmp(Parse(%q)) = %d; want %d", tt.y, tt.x, got, -tt.want)
		}
		if got := x.Equal(y); got != (tt.want == 0) {
			t.Errorf("Parse(%q).Equal(Parse(%q)) = %v; want %v", tt.x, tt.y, got, tt.want == 0)
		}
	}
}

func TestCmpInt64(t *testing.T) {
	tests := []struct {
		x    string
		y    int64
		want int
	}{
		{"0", 0, 0},
		{"1Ki", 1024, 0},
		{"1001m", 1, 1},
		{"999m", 1, -1},
		{"-1", -1, 0},
		{"9223372036854775808", math.MaxInt64, 1},
		{"-9223372036854775808", math.MinInt64, 0},
	}
	for _, tt := range tests {
		if got := MustParse(tt.x).CmpInt64(tt.y); got != tt.want {
			t.Errorf("Parse(%q).CmpInt64(%d) = %d; want %d", tt.x, tt.y, got, tt.want)
		}
	}
}

func TestAddSub(t *testing.T) {
	tests := []struct {
		x, y     string
		add, sub string // canonical String of x+y and x-y
	}{
		{"0.1", "0.2", "300m", "-100m"},
		{"1Gi", "1Mi", "1025Mi", "1023Mi"},
		{"1", "1m", "1001m", "999m"},
		{"100m", "100m", "200m", "0"},
		{"1Ki", "1", "1025", "1023"},
		{"10", "1Ki", "1034", "-1014"},
		{"1k", "1k", "2k", "0"},
		{"1e3", "1", "1001", "999"},
		{"1e3", "1e3", "2e3", "0"},
		{"1n", "1n", "2n", "0"},
		{"1.5Gi", "512Mi", "2Gi", "1Gi"},
		{"9223372036854775807", "1", "9223372036854775808", "9223372036854775806"},
		{"-9223372036854775808", "1", "-9223372036854775807", "-9223372036854775809"},
		{"9223372036854775807", "-9223372036854775808", "-1", "18446744073709551615"},
		{"4Ei", "4Ei", "8Ei", "0"},
		{"7Ei", "7Ei", "14Ei", "0"},
		{"123456789012345678901234567890", "1n", "123456789012345678901234567890000000001n", "123456789012345678901234567889999999999n"},
		{"123456789012345678901234567890", "123456789012345678901234567890", "246913578024691357802469135780", "0"},
	}
	for _, tt := range tests {
		x, y := MustParse(tt.x), MustParse(tt.y)
		sum := x
		sum.Add(y)
		if got := sum.String(); got != tt.add {
			t.Errorf("Parse(%q) + Parse(%q) = %q; want %q", tt.x, tt.y, got, tt.add)
		}
		diff := x
		diff.Sub(y)
		if got := diff.String(); got != tt.sub {
			t.Errorf("Parse(%q) - Parse(%q) = %q; want %q", tt.x, tt.y, got, tt.sub)
		}
		// Exactness: (x + y) - y == x and (x - y) + y == x.
		sum.Sub(y)
		diff.Add(y)
		if sum.Cmp(x) != 0 || diff.Cmp(x) != 0 {
			t.Errorf("Parse(%q) ± Parse(%q) ∓ it = %v, %v; want %v", tt.x, tt.y, sum, diff, x)
		}
		// The operands are untouched.
		if x.Cmp(MustParse(tt.x)) != 0 || y.Cmp(MustParse(tt.y)) != 0 {
			t.Errorf("Add/Sub of %q and %q changed an operand", tt.x, tt.y)
		}
	}
}

func TestAddExactTenths(t *testing.T) {
	var total Quantity
	tenth := MustParse("0.1")
	for range 10 {
		total.Add(tenth)
	}
	if total.Cmp(MustParse("1")) != 0 || total.String() != "1" {
		t.Errorf("ten times 0.1 = %q; want exactly 1", total.String())
	}
}

func TestAddSubFormat(t *testing.T) {
	tests := []struct {
		x, y     string
		sub      bool
		want     string
		wantForm Format
	}{
		// A zero receiver takes the other operand's format.
		{"0", "1Gi", false, "1Gi", BinarySI},
		{"0", "100m", false, "100m", DecimalSI},
		{"0", "1Gi", true, "-1Gi", BinarySI},
		{"0", "1e3", true, "-1e3", DecimalExponent},
		{"0Ki", "0", false, "0", DecimalSI},
		// A non-zero receiver keeps its own.
		{"1Gi", "0", false, "1Gi", BinarySI},
		{"100m", "0", true, "100m", DecimalSI},
		{"1Ki", "1k", false, "2024", BinarySI},
		{"2Ki", "1k", false, "3048", BinarySI},
		{"1k", "1Ki", false, "2024", DecimalSI},
		{"1e3", "24", false, "1024", DecimalExponent},
		{"1Ki", "1Ki", true, "0", BinarySI},
	}
	for _, tt := range tests {
		q := MustParse(tt.x)
		op := "+"
		if tt.sub {
			op = "-"
			q.Sub(MustParse(tt.y))
		} else {
			q.Add(MustParse(tt.y))
		}
		if got := q.String(); got != tt.want || q.Format != tt.wantForm {
			t.Errorf("Parse(%q) %s Parse(%q) = %q (%v); want %q (%v)", tt.x, op, tt.y, got, q.Format, tt.want, tt.wantForm)
		}
	}
	var zero Quantity
	zero.Add(MustParse("64Mi"))
	if zero.String() != "64Mi" {
		t.Errorf("Quantity{} + 64Mi = %q; want 64Mi", zero.String())
	}
}

func TestNeg(t *testing.T) {
	tests := []struct{ in, want string }{
		{"0", "0"},
		{"1", "-1"},
		{"-1", "1"},
		{"9.01", "-9010m"},
		{"1Ki", "-1Ki"},
		{"-9223372036854775808", "9223372036854775808"},
		{"9223372036854775808", "-9223372036854775808"},
		{"123456789012345678901234567890", "-123456789012345678901234567890"},
	}
	for _, tt := range tests {
		q := MustParse(tt.in)
		orig := q
		q.Neg()
		if got := q.String(); got != tt.want {
			t.Errorf("-Parse(%q) = %q; want %q", tt.in, got, tt.want)
		}
		if q.Format != orig.Format {
			t.Errorf("-Parse(%q).Format = %v; want %v", tt.in, q.Format, orig.Format)
		}
		if orig.String() != MustParse(tt.in).String() {
			t.Errorf("negating a copy of Parse(%q) changed the original to %q", tt.in, orig.String())
		}
		q.Neg()
		if q.Cmp(orig) != 0 {
			t.Errorf("--Parse(%q) = %v; want %v", tt.in, q, orig)
		}
	}
	q := NewQuantity(math.MinInt64, DecimalSI)
	q.Neg()
	if q.String() != "9223372036854775808" || q.Sign() != 1 {
		t.Errorf("-MinInt64 = %q; want 9223372036854775808", q.String())
	}
}

func TestCopyIsIndependent(t *testing.T) {
	a := MustParse("123456789012345678901234567890") // held as a big.Int
	b := a
	c := a.DeepCopy()
	var d Quantity
	a.DeepCopyInto(&d)
	b.Add(MustParse("1"))
	c.Neg()
	d.Sub(MustParse("1"))
	if got := a.String(); got != "123456789012345678901234567890" {
		t.Errorf("changing copies changed the original to %q", got)
	}
	if b.String() != "123456789012345678901234567891" || c.String() != "-123456789012345678901234567890" || d.String() != "123456789012345678901234567889" {
		t.Errorf("copies = %q, %q, %q", b.String(), c.String(), d.String())
	}
}

func TestSign(t *testing.T) {
	tests := []struct {
		in   string
		want int
	}{
		{"0", 0}, {"-0", 0}, {"1n", 1}, {"-1n", -1}, {"9Ei", 1}, {"-9Ei", -1},
		{"99999999999999999999", 1}, {"-99999999999999999999", -1},
	}
	for _, tt := range tests {
		q := MustParse(tt.in)
		if got := q.Sign(); got != tt.want {
			t.Errorf("Parse(%q).Sign() = %d; want %d", tt.in, got, tt.want)
		}
		if got := q.IsZero(); got != (tt.want == 0) {
			t.Errorf("Parse(%q).IsZero() = %v; want %v", tt.in, got, tt.want == 0)
		}
	}
}

func TestValue(t *testing.T) {
	const maxI, minI = math.MaxInt64, math.MinInt64
	tests := []struct {
		in          string
		value, mill int64
	}{
		{"0", 0, 0},
		{"1", 1, 1000},
		{"-1", -1, -1000},
		{"1.1", 2, 1100},
		{"-1.1", -2, -1100},
		{"1.5", 2, 1500},
		{"-0.5", -1, -500},
		{"100m", 1, 100},
		{"1m", 1, 1},
		{"999m", 1, 999},
		{"1001m", 2, 1001},
		{"1n", 1, 1},
		{"-1n", -1, -1},
		{"1.0001m", 1, 2},
		{"1.5m", 1, 2},
		{"-1.5m", -1, -2},
		{"1Ki", 1024, 1024000},
		{"1.5Gi", 1610612736, 1610612736000},
		{"1k", 1000, 1000000},
		{"1e3", 1000, 1000000},
		{"12345678901.23456789", 12345678902, 12345678901235},
		{"9223372036854775807", maxI, maxI},
		{"9223372036854775807m", 9223372036854776, maxI},
		{"-9223372036854775808", minI, minI},
		{"-9223372036854775808m", -9223372036854776, minI},
		{"9223372036854775808", maxI, maxI},
		{"9223372036854775806.5", maxI, maxI},
		{"9223372036854775807.5", maxI, maxI},
		{"-9223372036854775808.5", minI, minI},
		{"9223372036854775807999999999n", maxI, maxI},
		{"9Ei", maxI, maxI},
		{"-9Ei", -maxI, minI},
		{"1e30", maxI, maxI},
		{"-1e30", minI, minI},
		{"1e999", maxI, maxI},
		{"1234567890123456789012345678n", 1234567890123456790, maxI},
		{"-1234567890123456789012345678n", -1234567890123456790, minI},
	}
	for _, tt := range tests {
		q := MustParse(tt.in)
		if got := q.Value(); got != tt.value {
			t.Errorf("Parse(%q).Value() = %d; want %d", tt.in, got, tt.value)
		}
		if got := q.MilliValue(); got != tt.mill {
			t.Errorf("Parse(%q).MilliValue() = %d; want %d", tt.in, got, tt.mill)
		}
	}
}

func TestAsApproximateFloat64(t *testing.T) {
	tests := []struct {
		in   string
		want float64
	}{
		{"0", 0},
		{"1", 1},
		{"-1", -1},
		{"100m", 0.1},
		{"1.5Gi", 1.5 * (1 << 30)},
		{"1n", 1e-9},
		{"12e6", 12e6},
		{"1e308", 1e308},
		{"1e309", math.Inf(1)},
		{"-1e999", math.Inf(-1)},
		{"9Ei", 9223372036854775807},
		{"123456789012345678901234567890", 1.2345678901234568e29},
		{"0.1e-8", 1e-9},
	}
	for _, tt := range tests {
		if got := MustParse(tt.in).AsApproximateFloat64(); got != tt.want {
			t.Errorf("Parse(%q).AsApproximateFloat64() = %v; want %v", tt.in, got, tt.want)
		}
	}
}

func TestStringBeyondParseBounds(t *testing.T) {
	// Arithmetic can leave the range Parse accepts; String still renders
	// the exact value.
	q := MustParse("9e999")
	q.Add(MustParse("9e999"))
	if got := q.String(); got != "18e999" {
		t.Errorf("9e999 + 9e999 = %q; want 18e999", got)
	}
	b := MustParse("8Ei")
	b.Add(MustParse("8Ei")) // 2 × (2^63-1): the parse cap applies to each operand
	if got := b.String(); got != "18446744073709551614" {
		t.Errorf("8Ei + 8Ei = %q; want 18446744073709551614", got)
	}
	c := NewQuantity(math.MinInt64, BinarySI)
	c.Add(c)
	c.Neg()
	if got := c.String(); got != "16Ei" {
		t.Errorf("-2 × MinInt64 as BinarySI = %q; want 16Ei", got)
	}
	e := NewQuantity(1<<62, BinarySI)
	for range 8 {
		e.Add(e)
	}
	if got := e.String(); got != "1024Ei" {
		t.Errorf("2^70 as BinarySI = %q; want 1024Ei", got)
	}
	d := MustParse("1" + strings.Repeat("0", 999)) // 10^999
	d.Add(d)
	if got := d.String(); got != "2e999" {
		t.Errorf("2 × 10^999 = %q; want 2e999", got)
	}
}
