package resource

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"math/big"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// FuzzParse checks that Parse never panics, accepts exactly the documented
// grammar, agrees with an independent big.Rat model of Kubernetes'
// parsing, and that every parsed quantity survives String and JSON.
func FuzzParse(f *testing.F) {
	for _, tt := range parseTests {
		f.Add(tt.in)
	}
	for _, s := range []string{
		"", " ", "-", ".", "Ki", "1.2.3", "1Ki5", "--1", "1e", "1e+", "1K",
		"1e1000", "1e-2147483648", "1e2147483648", "9.99e999", "0.00097656249Ki",
		"-9223372036854775808", "9223372036854775808Ki", "0.000000000000000000000000001Ei",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q, err := Parse(s)
		matched := quantityRE.MatchString(s)
		if err != nil {
			if matched != errors.Is(err, ErrRange) {
				t.Fatalf("Parse(%q) = error %v, but the regexp match is %v", s, err, matched)
			}
			if !strings.HasPrefix(err.Error(), "invalid quantity ") {
				t.Fatalf("Parse(%q) = error %q; want it to name the input", s, err)
			}
			return
		}
		if !matched {
			t.Fatalf("Parse(%q) = %v; want an error, the input does not match the grammar", s, q)
		}
		checkQuantity(t, s, q)
		if want, format, ok := oracle(s); ok {
			if got := ratOf(q); got.Cmp(want) != 0 || q.Format != format {
				t.Fatalf("Parse(%q) = %s (%v); want %s (%v)", s, got.FloatString(12), q.Format, want.FloatString(12), format)
			}
		}
	})
}

// FuzzUnmarshalJSON checks that UnmarshalJSON never panics, leaves its
// target alone on error, agrees with encoding/json and with Parse, and
// that what it decodes survives String and JSON.
func FuzzUnmarshalJSON(f *testing.F) {
	for _, s := range []string{
		`"100m"`, `"1.5Gi"`, `0.5`, `1e3`, `-1`, `null`, `" 1 "`, `"\u0031Ki"`,
		`true`, `{}`, `"1e1000"`, `01`, `"`, ``, `"1" "2"`, `1.5E-3`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		sentinel := MustParse("7Gi")
		q := sentinel
		err := q.UnmarshalJSON(data)
		if err != nil {
			if q.Cmp(sentinel) != 0 || q.Format != sentinel.Format {
				t.Fatalf("failed UnmarshalJSON(%q) changed its target to %v", data, q)
			}
		} else {
			checkQuantity(t, string(data), q)
		}
		if json.Valid(data) {
			var viaJSON Quantity
			jerr := json.Unmarshal(data, &viaJSON)
			if (jerr == nil) != (err == nil) || (err == nil && (viaJSON.Cmp(q) != 0 || viaJSON.Format != q.Format)) {
				t.Fatalf("json.Unmarshal(%q) = %v, %v; UnmarshalJSON = %v, %v", data, viaJSON, jerr, q, err)
			}
		}
		if trimmed := bytes.TrimSpace(data); len(trimmed) > 0 && trimmed[0] == '"' {
			var s string
			if json.Unmarshal(trimmed, &s) == nil {
				p, perr := Parse(strings.TrimSpace(s))
				if (perr == nil) != (err == nil) || (err == nil && (p.Cmp(q) != 0 || p.Format != q.Format)) {
					t.Fatalf("UnmarshalJSON(%q) = %v, %v; Parse(%q) = %v, %v", data, q, err, s, p, perr)
				}
			}
		}
	})
}

// checkQuantity checks the properties every valid quantity has.
func checkQuantity(t *testing.T, origin string, q Quantity) {
	t.Helper()
	s := q.String()
	again, err := Parse(s)
	if err != nil {
		t.Fatalf("%q: Parse(String() = %q) = error %v", origin, s, err)
	}
	if again.Cmp(q) != 0 {
		t.Fatalf("%q: Parse(String() = %q) = %v, not equal to the original", origin, s, again)
	}
	// Rendered in q's format, the re-parsed value gives the same text. (In
	// its own format it may not: BinarySI 10^9 is "1000000000", which
	// re-parses as DecimalSI and renders as "1G", as in Kubernetes.)
	again.Format = q.Format
	if got := again.String(); got != s {
		t.Fatalf("%q: String is not stable: %q then %q", origin, s, got)
	}
	b, err := json.Marshal(q)
	if err != nil {
		t.Fatalf("%q: json.Marshal = error %v", origin, err)
	}
	var back Quantity
	if err := json.Unmarshal(b, &back); err != nil || back.Cmp(q) != 0 {
		t.Fatalf("%q: JSON round trip via %s = %v, %v", origin, b, back, err)
	}
	// Value and MilliValue round away from zero and saturate.
	v, mv := q.Value(), q.MilliValue()
	if sgn := q.Sign(); cmpInt(v, 0) != sgn || cmpInt(mv, 0) != sgn {
		t.Fatalf("%q: Sign %d but Value %d, MilliValue %d", origin, sgn, v, mv)
	}
	if q.Sign() > 0 && v != math.MaxInt64 && q.CmpInt64(v) > 0 {
		t.Fatalf("%q: Value %d is below the quantity", origin, v)
	}
	if q.Sign() < 0 && v != math.MinInt64 && q.CmpInt64(v) < 0 {
		t.Fatalf("%q: Value %d is above the quantity", origin, v)
	}
	f := q.AsApproximateFloat64()
	if (f > 0) != (q.Sign() > 0) || (f < 0) != (q.Sign() < 0) {
		t.Fatalf("%q: AsApproximateFloat64 = %v but Sign = %d", origin, f, q.Sign())
	}
	// Arithmetic is exact.
	d := q
	d.Add(q)
	d.Sub(q)
	if d.Cmp(q) != 0 {
		t.Fatalf("%q: q + q - q = %v", origin, d)
	}
	n := q
	n.Neg()
	n.Add(q)
	if !n.IsZero() {
		t.Fatalf("%q: -q + q = %v", origin, n)
	}
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

var oracleRE = regexp.MustCompile(`^([+-]?)([0-9]*)(?:\.([0-9]*))?(.*)$`)

// oracle models Kubernetes' parsing of a grammatical s with big.Rat: the
// exact value, rounded away from zero to nano, binarySI capped at 2^63-1.
// It declines inputs whose exact value would be costly to build.
func oracle(s string) (*big.Rat, Format, bool) {
	m := oracleRE.FindStringSubmatch(s)
	if m == nil || len(s) > 200 {
		return nil, "", false
	}
	v, ok := new(big.Rat).SetString(m[2] + "." + m[3] + "0")
	if !ok {
		return nil, "", false
	}
	format := DecimalSI
	binary := false
	decimal := map[string]int{"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
	bin := map[string]uint{"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
	if e, ok := decimal[m[4]]; ok {
		v.Mul(v, ratPow10(e))
	} else if b, ok := bin[m[4]]; ok {
		v.Mul(v, new(big.Rat).SetInt(new(big.Int).Lsh(big.NewInt(1), b)))
		format, binary = BinarySI, true
	} else {
		e, err := strconv.Atoi(m[4][1:])
		if err != nil || e > 400 || e < -400 {
			return nil, "", false
		}
		v.Mul(v, ratPow10(e))
		format = DecimalExponent
	}
	if v.Sign() != 0 {
		nanos := new(big.Rat).Mul(v, ratPow10(9))
		num, den := nanos.Num(), nanos.Denom()
		ceil := new(big.Int).Add(num, new(big.Int).Sub(den, big.NewInt(1)))
		ceil.Quo(ceil, den)
		v.SetFrac(ceil, pow10Big(9))
	}
	if binary {
		if limit := new(big.Rat).SetInt64(math.MaxInt64); v.Cmp(limit) > 0 {
			v = limit
		}
		if v.Sign() > 0 && v.Cmp(big.NewRat(1, 1)) < 0 {
			format = DecimalSI
		}
	}
	if m[1] == "-" {
		v.Neg(v)
	}
	return v, format, true
}

func ratPow10(e int) *big.Rat {
	if e >= 0 {
		return new(big.Rat).SetInt(pow10Big(int64(e)))
	}
	return new(big.Rat).SetFrac(big.NewInt(1), pow10Big(int64(-e)))
}

// TestParseMatchesModel compares Parse with the big.Rat model on random
// grammatical inputs, weighted towards long fractions and runs of zeros
// and nines, which exercise rounding to nano and the binarySI shortcuts.
func TestParseMatchesModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	suffixes := []string{"", "n", "u", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"}
	digits := func(n int) string {
		var b strings.Builder
		for range n {
			switch rng.IntN(4) {
			case 0:
				b.WriteByte('0')
			case 1:
				b.WriteByte('9')
			default:
				b.WriteByte(byte('0' + rng.IntN(10)))
			}
		}
		return b.String()
	}
	for i := range 20000 {
		var s strings.Builder
		s.WriteString([]string{"", "-", "+"}[rng.IntN(3)])
		intPart := digits(rng.IntN(22))
		s.WriteString(intPart)
		if rng.IntN(4) > 0 || intPart == "" {
			s.WriteByte('.')
			frac := strings.Repeat("0", rng.IntN(80)) + digits(rng.IntN(90))
			if intPart == "" && frac == "" {
				frac = "1"
			}
			s.WriteString(frac)
		}
		if rng.IntN(5) == 0 {
			s.WriteString([]string{"e", "E"}[rng.IntN(2)] + strconv.Itoa(rng.IntN(60)-30))
		} else {
			s.WriteString(suffixes[rng.IntN(len(suffixes))])
		}
		in := s.String()
		want, format, ok := oracle(in)
		if !ok {
			continue
		}
		q, err := Parse(in)
		if err != nil {
			t.Fatalf("#%d: Parse(%q) = error %v", i, in, err)
		}
		if got := ratOf(q); got.Cmp(want) != 0 || q.Format != format {
			t.Fatalf("#%d: Parse(%q) = %s (%v); want %s (%v)", i, in, got.FloatString(12), q.Format, want.FloatString(12), format)
		}
	}
}
