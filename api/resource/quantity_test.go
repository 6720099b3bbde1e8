package resource

import (
	"errors"
	"math"
	"math/big"
	"regexp"
	"strings"
	"testing"
	"time"
)

var quantityRE = regexp.MustCompile(quantityRegexp)

// parseTests maps inputs to the canonical String Kubernetes gives them and
// the Format the parsed quantity carries. Most rows come from the
// Kubernetes quantity tests (TestQuantityParse, TestQuantityParseEmit).
var parseTests = []struct {
	in     string
	want   string
	format Format
}{
	// Zero keeps the format of its suffix but always renders as "0".
	{"0", "0", DecimalSI},
	{"0n", "0", DecimalSI},
	{"0u", "0", DecimalSI},
	{"0m", "0", DecimalSI},
	{"0k", "0", DecimalSI},
	{"0Ki", "0", BinarySI},
	{"0Mi", "0", BinarySI},
	{"0e5", "0", DecimalExponent},
	{"000.000", "0", DecimalSI},
	{"-0", "0", DecimalSI},
	{"0e2000000000", "0", DecimalExponent},

	{"1", "1", DecimalSI},
	{"1024", "1024", DecimalSI},
	{"1000", "1k", DecimalSI},
	{"+1", "1", DecimalSI},
	{"007", "7", DecimalSI},

	// Binary suffixes.
	{"1Ki", "1Ki", BinarySI},
	{"8Ki", "8Ki", BinarySI},
	{"7Mi", "7Mi", BinarySI},
	{"6Gi", "6Gi", BinarySI},
	{"5Ti", "5Ti", BinarySI},
	{"4Pi", "4Pi", BinarySI},
	{"3Ei", "3Ei", BinarySI},
	{"10Ti", "10Ti", BinarySI},
	{"100Ti", "100Ti", BinarySI},
	{"64Mi", "64Mi", BinarySI},
	{"1024Mi", "1Gi", BinarySI},
	{"1000Mi", "1000Mi", BinarySI},
	{"1.5Gi", "1536Mi", BinarySI},
	{"1025Ki", "1025Ki", BinarySI},

	// Decimal suffixes.
	{"5n", "5n", DecimalSI},
	{"4u", "4u", DecimalSI},
	{"3m", "3m", DecimalSI},
	{"100m", "100m", DecimalSI},
	{"9", "9", DecimalSI},
	{"8k", "8k", DecimalSI},
	{"50k", "50k", DecimalSI},
	{"5000k", "5M", DecimalSI},
	{"7M", "7M", DecimalSI},
	{"1000M", "1G", DecimalSI},
	{"6G", "6G", DecimalSI},
	{"5T", "5T", DecimalSI},
	{"40T", "40T", DecimalSI},
	{"300T", "300T", DecimalSI},
	{"2P", "2P", DecimalSI},
	{"1E", "1E", DecimalSI},
	{"12E", "12E", DecimalSI},
	// No suffix beyond E: exponent notation, as current Kubernetes does.
	{"1000E", "1e21", DecimalSI},
	{"5000E", "5e21", DecimalSI},

	// Decimal exponents.
	{"1E-3", "1e-3", DecimalExponent},
	{"1e3", "1e3", DecimalExponent},
	{"1E6", "1e6", DecimalExponent},
	{"1e9", "1e9", DecimalExponent},
	{"1E12", "1e12", DecimalExponent},
	{"1e15", "1e15", DecimalExponent},
	{"1E18", "1e18", DecimalExponent},
	{"12e6", "12e6", DecimalExponent},
	{"1e14", "100e12", DecimalExponent},
	{"1e13", "10e12", DecimalExponent},
	{"1e+3", "1e3", DecimalExponent},
	{"1e0003", "1e3", DecimalExponent},
	{"1e0", "1", DecimalExponent},
	{"1e21", "1e21", DecimalExponent},
	{"1e999", "1e999", DecimalExponent},
	{"1.2e3", "1200", DecimalExponent},
	{"1.5e3", "1500", DecimalExponent},
	{"1.3E+6", "1300e3", DecimalExponent},
	{"1.40e9", "1400e6", DecimalExponent},
	{"1.53E12", "1530e9", DecimalExponent},
	{"1.6e15", "1600e12", DecimalExponent},
	{"1.7E18", "1700e15", DecimalExponent},
	{"0.5e0", "500e-3", DecimalExponent},
	{"0.5e-1", "50e-3", DecimalExponent},
	{"0.5e-2", "5e-3", DecimalExponent},

	// Things that look like floating point.
	{"0.5", "500m", DecimalSI},
	{"0.1", "100m", DecimalSI},
	{"1.5", "1500m", DecimalSI},
	{"0.0001", "100u", DecimalSI},
	{"0.001", "1m", DecimalSI},
	{"0.0005k", "500m", DecimalSI},
	{"0.005", "5m", DecimalSI},
	{"0.05", "50m", DecimalSI},
	{"0.00050k", "500m", DecimalSI},
	{"0.00500", "5m", DecimalSI},
	{"0.05000", "50m", DecimalSI},
	{"0.50000", "500m", DecimalSI},
	{"100.035k", "100035", DecimalSI},
	{"10.035M", "10035k", DecimalSI},
	{"9.01", "9010m", DecimalSI},
	{"8.1k", "8100", DecimalSI},
	{"7.123456M", "7123456", DecimalSI},
	{"6.987654321G", "6987654321", DecimalSI},
	{"5.444T", "5444G", DecimalSI},
	{"40.1T", "40100G", DecimalSI},
	{"300.2T", "300200G", DecimalSI},
	{"2.5P", "2500T", DecimalSI},
	{"1.01E", "1010P", DecimalSI},
	// Kubernetes echoes these back unchanged (kubernetes#138165); the
	// canonical form is what it means to produce.
	{"1.001", "1001m", DecimalSI},
	{"1.500", "1500m", DecimalSI},
	{"1.100k", "1100", DecimalSI},

	// Rounding to nano (away from zero) and the binarySI cap.
	{"3.001n", "4n", DecimalSI},
	{"1.1E-9", "2e-9", DecimalExponent},
	{"0.0000000001", "1n", DecimalSI},
	{"0.0000000005", "1n", DecimalSI},
	{"0.00000000050", "1n", DecimalSI},
	{"0.5e-9", "1e-9", DecimalExponent},
	{"0.9n", "1n", DecimalSI},
	{"0.1n", "1n", DecimalSI},
	{"1n", "1n", DecimalSI},
	{"0.00000012345", "124n", DecimalSI},
	{"0.00000012354", "124n", DecimalSI},
	{"1e-2000", "1e-9", DecimalExponent},
	{"1e-2147483648", "1e-9", DecimalExponent},
	{"9Ei", "9223372036854775807", BinarySI},
	{"8Ei", "9223372036854775807", BinarySI},
	{"7.5Ei", "7680Pi", BinarySI},
	{"9223372036854775807Ki", "9223372036854775807", BinarySI},
	{"99999999999999999999999Ki", "9223372036854775807", BinarySI},
	{"9223372036854775807", "9223372036854775807", DecimalSI},
	{"9223372036854775808", "9223372036854775808", DecimalSI},
	{"123456789012345678901234567890", "123456789012345678901234567890", DecimalSI},

	// Fractional binary values.
	{"100.035Ki", "102435840m", BinarySI},
	{"0.5Mi", "512Ki", BinarySI},
	{"0.05Gi", "53687091200m", BinarySI},
	{"0.025Ti", "27487790694400m", BinarySI},
	{".001Ki", "1024m", BinarySI},
	{"0.5Ki", "512", BinarySI},
	// Below 1 a binary value becomes DecimalSI, as in Kubernetes.
	{".000001Ki", "1024u", DecimalSI},
	{".000000001Ki", "1024n", DecimalSI},
	{".000000000001Ki", "2n", DecimalSI},
	{"0.000000000001Ki", "2n", DecimalSI},
	{"0.0009765625Ki", "1", BinarySI},
	{"0.00097656249Ki", "999999990n", DecimalSI},
	// A whole binary value that is not a multiple of 1024 has no suffix;
	// its text re-parses as DecimalSI ("1G"), as in Kubernetes.
	{".0000000008673617379884035467Ei", "1000000000", BinarySI},
	{"1000000000", "1G", DecimalSI},
	// 2^-60 × 10^-9 exactly is 1n in Ei; a digit far past it tips it over.
	{"0.000000000000000000000000000867361737988403547205962240695953369140625Ei", "1n", DecimalSI},
	{"0.0000000000000000000000000008673617379884035472059622406959533691406250000000001Ei", "2n", DecimalSI},
	{"0.0000000000000000000000000008673617379884035472059622406959533691406249999999999Ei", "1n", DecimalSI},

	// Odd but documented spellings.
	{".001", "1m", DecimalSI},
	{".5", "500m", DecimalSI},
	{".0001k", "100m", DecimalSI},
	{"1.", "1", DecimalSI},
	{"5.", "5", DecimalSI},
	{"1.G", "1G", DecimalSI},
	{"5.Ki", "5Ki", BinarySI},
	{"1.e3", "1e3", DecimalExponent},
}

func TestParse(t *testing.T) {
	for _, tt := range parseTests {
		q, err := Parse(tt.in)
		if err != nil {
			t.Errorf("Parse(%q) = error %v; want %q", tt.in, err, tt.want)
			continue
		}
		if got := q.String(); got != tt.want {
			t.Errorf("Parse(%q).String() = %q; want %q", tt.in, got, tt.want)
		}
		if q.Format != tt.format {
			t.Errorf("Parse(%q).Format = %v; want %v", tt.in, q.Format, tt.format)
		}
		if !quantityRE.MatchString(tt.in) {
			t.Errorf("%q parses but does not match %s", tt.in, quantityRegexp)
		}
		if q.IsZero() {
			continue
		}
		// The same with an explicit sign.
		neg, err := Parse("-" + strings.TrimPrefix(tt.in, "+"))
		if err != nil {
			t.Errorf("Parse(-%q) = error %v", tt.in, err)
		} else if got := neg.String(); got != "-"+tt.want {
			t.Errorf("Parse(-%q).String() = %q; want %q", tt.in, got, "-"+tt.want)
		} else if neg.Format != tt.format {
			t.Errorf("Parse(-%q).Format = %v; want %v", tt.in, neg.Format, tt.format)
		}
		if !strings.HasPrefix(tt.in, "+") {
			pos, err := Parse("+" + tt.in)
			if err != nil || pos.Cmp(q) != 0 || pos.Format != q.Format {
				t.Errorf("Parse(+%q) = %v, %v; want %v", tt.in, pos, err, q)
			}
		}
	}
}

func TestParseRoundTrip(t *testing.T) {
	for _, tt := range parseTests {
		q := MustParse(tt.in)
		s := q.String()
		again, err := Parse(s)
		if err != nil {
			t.Errorf("Parse(%q) (String of %q) = error %v", s, tt.in, err)
			continue
		}
		if again.Cmp(q) != 0 {
			t.Errorf("Parse(%q) = %v; want a value equal to Parse(%q) = %v", s, again, tt.in, q)
		}
		again.Format = q.Format
		if got := again.String(); got != s {
			t.Errorf("Parse(%q) in format %v renders as %q; want it unchanged", s, q.Format, got)
		}
	}
}

func TestParseValue(t *testing.T) {
	// Exact values, checked through the internal representation.
	tests := []struct {
		in   string
		want string // unscaled value
		exp  int32
	}{
		{"1.5Gi", "1610612736", 0},
		{"100m", "1", -1},
		{"0.00000012345", "124", -9},
		{"-0.00000012345", "-124", -9},
		{"100.035Ki", "10243584", -2},
		{"9Ei", "9223372036854775807", 0},
		{"-9Ei", "-9223372036854775807", 0},
		{"1.000000001", "1000000001", -9},
		{"1.0000000001", "1000000001", -9},
		{"1." + strings.Repeat("0", 100000) + "1", "1000000001", -9},
		{"0." + strings.Repeat("0", 100000) + "1Ki", "1", -9},
		{"1." + strings.Repeat("9", 100000), "2", 0},
		{"123456789012345678901.2345678901", "123456789012345678901234567891", -9},
	}
	for _, tt := range tests {
		q, err := Parse(tt.in)
		if err != nil {
			t.Errorf("Parse(%.20q) = error %v", tt.in, err)
			continue
		}
		if got := q.unscaled().String(); got != tt.want || q.exp != tt.exp {
			t.Errorf("Parse(%.20q) = %s×10^%d; want %s×10^%d", tt.in, got, q.exp, tt.want, tt.exp)
		}
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		in   string
		want error
	}{
		{"", ErrFormatWrong},
		{" 1", ErrFormatWrong},
		{"1 ", ErrFormatWrong},
		{" ", ErrFormatWrong},
		{"1\n", ErrFormatWrong},
		{"1.2.3", ErrFormatWrong},
		{"1.1.M", ErrFormatWrong},
		{"1+1.0M", ErrFormatWrong},
		{"--1", ErrFormatWrong},
		{"+-1", ErrFormatWrong},
		{"-", ErrFormatWrong},
		{"+", ErrFormatWrong},
		{".", ErrFormatWrong},
		{"-.", ErrFormatWrong},
		{"Ki", ErrFormatWrong},
		{"m", ErrFormatWrong},
		{"e3", ErrFormatWrong},
		{".Ki", ErrFormatWrong},
		{"aoeu", ErrFormatWrong},
		{"0.1am", ErrFormatWrong},
		{"0x10", ErrFormatWrong},
		{"1_000", ErrFormatWrong},
		{"1,5", ErrFormatWrong},
		{"Inf", ErrFormatWrong},
		{"NaN", ErrFormatWrong},
		{"1e3.5", ErrFormatWrong},
		{"1Kib", ErrFormatWrong},
		{"1\xff", ErrFormatWrong},
		{"١", ErrFormatWrong},
		{"1Ki5", ErrSuffix},
		{"1e", ErrSuffix},
		{"1E+", ErrSuffix},
		{"1e-", ErrSuffix},
		{"-3.01e-", ErrSuffix},
		{"1ee3", ErrSuffix},
		{"1E+-3", ErrSuffix},
		{"1K", ErrSuffix},
		{"1i", ErrSuffix},
		{".5i", ErrSuffix},
		{"-3.01i", ErrSuffix},
		{"0.1mi", ErrSuffix},
		{"1k5", ErrSuffix},
		{"1KI", ErrFormatWrong},
		{"1mm", ErrSuffix},
		{"1e1000", ErrRange},
		{"-1e1000", ErrRange},
		{"10e999", ErrRange},
		{"1" + strings.Repeat("0", 1000), ErrRange},
		{"0.1e1001", ErrRange},
		{"1e2147483648", ErrRange},
		{"1e-2147483649", ErrRange},
		{"0e99999999999", ErrRange},
		{"1e99999999999999999999999999", ErrRange},
	}
	for _, tt := range tests {
		q, err := Parse(tt.in)
		if err == nil {
			t.Errorf("Parse(%q) = %v; want error %v", tt.in, q, tt.want)
			continue
		}
		if !errors.Is(err, tt.want) {
			t.Errorf("Parse(%q) = error %q; want one wrapping %q", tt.in, err, tt.want)
		}
		if !strings.Contains(err.Error(), "invalid quantity ") {
			t.Errorf("Parse(%q) = error %q; want it to name the input", tt.in, err)
		}
		if got := quantityRE.MatchString(tt.in); got != (tt.want == ErrRange) {
			t.Errorf("regexp match of %q = %v; want %v", tt.in, got, tt.want == ErrRange)
		}
	}
}

func TestParseErrorMessages(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", `invalid quantity "": empty string: quantities must match the regular expression`},
		{"1.2.3", `invalid quantity "1.2.3": unexpected '.' at offset 3:`},
		{"--1", `invalid quantity "--1": expected a digit at offset 1, found '-':`},
		{"Ki", `invalid quantity "Ki": expected a digit at offset 0, found 'K':`},
		{"1 ", `invalid quantity "1 ": unexpected ' ' at offset 1:`},
		{"1Ki5", `invalid quantity "1Ki5": suffix "Ki5" is not one of n, u, m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei or e/E followed by an integer exponent: unable to parse quantity's suffix`},
		{"1e1000", `invalid quantity "1e1000": magnitude must be below 1e1000: quantity out of range`},
		{"1e9999999999", `invalid quantity "1e9999999999": exponent 9999999999 does not fit in 32 bits: quantity out of range`},
		{strings.Repeat("1", 100) + "x", `invalid quantity "` + strings.Repeat("1", 64) + `...": unexpected 'x' at offset 100`},
	}
	for _, tt := range tests {
		_, err := Parse(tt.in)
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("Parse(%q) = error %v; want one starting %q", tt.in, err, tt.want)
		}
	}
}

func TestParseLargeInputsAreFast(t *testing.T) {
	// Each of these would take minutes or gigabytes if the exponent were
	// expanded; with the bounds they are linear in the input.
	inputs := []string{
		"1e2147483647", "1e-2147483648", "9e-2147483648Ki", "-1e-2147483648",
		"0." + strings.Repeat("0", 1<<20) + "1",
		"0." + strings.Repeat("0", 1<<20) + "1Ei",
		"1." + strings.Repeat("3", 1<<20) + "Ei",
		strings.Repeat("9", 1<<20) + "Ki",
		strings.Repeat("9", 1<<20),
		strings.Repeat("0", 1<<20) + "1e999",
	}
	start := time.Now()
	for _, in := range inputs {
		q, err := Parse(in)
		if err == nil {
			_ = q.String()
			_ = q.Value()
			_ = q.Cmp(MustParse("1n"))
		}
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("parsing large inputs took %v", d)
	}
}

func TestMustParse(t *testing.T) {
	if got := MustParse("250m").String(); got != "250m" {
		t.Errorf(`MustParse("250m").String() = %q; want "250m"`, got)
	}
	defer func() {
		r := recover()
		if r == nil {
			t.Fatal(`MustParse("bogus") did not panic`)
		}
		if msg, _ := r.(string); !strings.Contains(msg, `"bogus"`) {
			t.Errorf(`MustParse("bogus") panicked with %v; want the input named`, r)
		}
	}()
	MustParse("bogus")
}

func TestNewQuantity(t *testing.T) {
	tests := []struct {
		q    Quantity
		want string
	}{
		{NewQuantity(1, DecimalSI), "1"},
		{NewQuantity(1000, DecimalSI), "1k"},
		{NewQuantity(1234000, DecimalSI), "1234k"},
		{NewQuantity(1024, BinarySI), "1Ki"},
		{NewQuantity(1024*1024, BinarySI), "1Mi"},
		{NewQuantity(1000000, "invalidFormatDefaultsToExponent"), "1e6"},
		{NewQuantity(5, ""), "5"},
		{NewQuantity(0, BinarySI), "0"},
		{NewQuantity(-1024, BinarySI), "-1Ki"},
		{NewQuantity(-1023, BinarySI), "-1023"},
		{NewQuantity(math.MinInt64, BinarySI), "-8Ei"},
		{NewQuantity(math.MaxInt64, BinarySI), "9223372036854775807"},
		{NewQuantity(math.MinInt64, DecimalSI), "-9223372036854775808"},
		{NewMilliQuantity(1, DecimalSI), "1m"},
		{NewMilliQuantity(1000, DecimalSI), "1"},
		{NewMilliQuantity(1234000, DecimalSI), "1234"},
		{NewMilliQuantity(1024, BinarySI), "1024m"},
		{NewMilliQuantity(1024*1024, BinarySI), "1048576m"},
		{NewMilliQuantity(1024*1000, BinarySI), "1Ki"},
		{NewMilliQuantity(1000000, "invalidFormatDefaultsToExponent"), "1e3"},
		{NewMilliQuantity(0, DecimalSI), "0"},
		{NewMilliQuantity(math.MinInt64, DecimalSI), "-9223372036854775808m"},
	}
	for _, tt := range tests {
		if got := tt.q.String(); got != tt.want {
			t.Errorf("%#v.String() = %q; want %q", tt.q, got, tt.want)
		}
	}
}

func TestZeroValue(t *testing.T) {
	var q Quantity
	if q.String() != "0" || !q.IsZero() || q.Sign() != 0 || q.Value() != 0 || q.MilliValue() != 0 || q.AsApproximateFloat64() != 0 {
		t.Errorf("zero Quantity: String %q IsZero %v Sign %d Value %d MilliValue %d Float %v",
			q.String(), q.IsZero(), q.Sign(), q.Value(), q.MilliValue(), q.AsApproximateFloat64())
	}
	if q.Cmp(MustParse("0Ki")) != 0 || q.Cmp(MustParse("1n")) != -1 || q.Cmp(MustParse("-1n")) != 1 {
		t.Error("zero Quantity compares wrongly")
	}
}

func BenchmarkParse(b *testing.B) {
	inputs := []string{"100m", "64Mi", "1.5Gi", "1", "0.5", "12e6", "123456789012345678901234567890n"}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, err := Parse(inputs[i%len(inputs)]); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkString(b *testing.B) {
	qs := []Quantity{MustParse("100m"), MustParse("64Mi"), MustParse("1.5Gi"), MustParse("12e6")}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		_ = qs[i%len(qs)].String()
	}
}

// ratOf returns the exact value of q.
func ratOf(q Quantity) *big.Rat {
	r := new(big.Rat).SetInt(q.unscaled())
	p := new(big.Rat).SetInt(pow10Big(int64(abs32(q.exp))))
	if q.exp >= 0 {
		return r.Mul(r, p)
	}
	return r.Quo(r, p)
}

func abs32(x int32) int32 {
	if x < 0 {
		return -x
	}
	return x
}
