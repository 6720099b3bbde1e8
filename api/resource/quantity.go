package resource

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Quantity is an exact, fixed-point decimal number with a preferred
// rendering [Format], as Kubernetes uses for resource requests and limits.
//
// The zero value is 0 and ready to use. A Quantity is a value type: copying
// it is safe and copies never share mutable state. Do not compare quantities
// with ==; use [Quantity.Cmp] or [Quantity.Equal], since the same value can
// be held in more than one internal form.
//
// Methods that read a quantity have value receivers. [Quantity.Add],
// [Quantity.Sub], [Quantity.Neg] and [Quantity.UnmarshalJSON] modify the
// quantity in place through a pointer receiver, as in Kubernetes.
type Quantity struct {
	// small is the unscaled value when big is nil.
	small int64
	// big is the unscaled value when it does not fit in an int64. It is
	// never mutated once stored in a Quantity, so copies may share it.
	big *big.Int
	// exp is the decimal exponent: the value is unscaled × 10^exp. Every
	// Quantity this package builds has exp within [-9, maxDecimalExponent]
	// (-3 for NewMilliQuantity), which bounds the cost of aligning two
	// values.
	exp int32

	// Format is the form String renders the value in. It may be changed
	// at will; a value other than the three Format constants renders as
	// DecimalExponent, as in Kubernetes.
	Format Format
}

// Format says how a Quantity is rendered by String: with decimal SI
// suffixes, binary SI suffixes or a decimal exponent.
type Format string

// The three formats, with the same names and values as in Kubernetes.
const (
	// DecimalExponent renders a mantissa and a decimal exponent that is a
	// multiple of three, e.g. 12e6. It is the format of "e"/"E" input.
	DecimalExponent = Format("DecimalExponent")
	// BinarySI renders a mantissa and a binary suffix, e.g. 12Mi
	// (12 × 2^20). It is the format of Ki, Mi, Gi, Ti, Pi and Ei input.
	BinarySI = Format("BinarySI")
	// DecimalSI renders a mantissa and a decimal suffix, e.g. 12M
	// (12 × 10^6). It is the format of all other input.
	DecimalSI = Format("DecimalSI")
)

// quantityRegexp is the exact syntax Parse accepts; see the package comment.
const quantityRegexp = `^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([numkMGTPE]|[KMGTPE]i|[eE][+-]?[0-9]+)?$`

// Errors returned by Parse, wrapped with the offending input and a
// description of what is wrong; test for them with errors.Is.
var (
	// ErrFormatWrong reports text that does not match the quantity syntax.
	ErrFormatWrong = errors.New("quantities must match the regular expression '" + quantityRegexp + "'")
	// ErrSuffix reports a suffix that is not one of the known suffixes.
	ErrSuffix = errors.New("unable to parse quantity's suffix")
	// ErrRange reports a well-formed quantity whose exponent or magnitude
	// is beyond the bounds this package accepts (see the package comment).
	ErrRange = errors.New("quantity out of range")
)

const (
	// maxDecimalExponent bounds decimal values: |value| < 10^maxDecimalExponent.
	maxDecimalExponent = 1000
	// nanoExp is the finest decimal exponent parsing keeps.
	nanoExp = -9
	// binaryKeep is the finest decimal position of a binarySI mantissa that
	// can change the rounded result; finer digits only matter as "non-zero".
	// It must satisfy -binaryKeep-9 >= 60 (the largest binary exponent).
	binaryKeep = -70
)

// MustParse is like Parse but panics if s is not a valid quantity. Use it
// only in tests and for package-level constants whose text is known to be
// valid; never on input from users or the network.
func MustParse(s string) Quantity {
	q, err := Parse(s)
	if err != nil {
		panic(fmt.Sprintf("resource.MustParse(%q): %v", s, err))
	}
	return q
}

// NewQuantity returns a Quantity holding value, rendered in format.
func NewQuantity(value int64, format Format) Quantity {
	return Quantity{small: value, Format: format}
}

// NewMilliQuantity returns a Quantity holding value/1000, rendered in format.
// As in Kubernetes, BinarySI falls back to DecimalSI rendering for values
// that are not whole numbers or lie strictly between -1024 and 1024.
func NewMilliQuantity(value int64, format Format) Quantity {
	if value == 0 {
		return Quantity{Format: format}
	}
	return Quantity{small: value, exp: -3, Format: format}
}

// Parse reads a quantity in the Kubernetes syntax described in the package
// comment, such as "100m", "1.5Gi", "-2", ".5" or "1E-3". The result keeps
// the format implied by the suffix: BinarySI for Ki...Ei, DecimalExponent
// for e/E, DecimalSI otherwise. Values finer than 1n are rounded away from
// zero, binarySI values are capped at 2^63-1 in magnitude, and other values
// of magnitude 10^1000 or more are rejected.
//
// Errors name the input and what is wrong with it, and wrap ErrFormatWrong,
// ErrSuffix or ErrRange.
func Parse(s string) (Quantity, error) {
	if s == "" {
		return Quantity{}, parseError(s, "empty string", ErrFormatWrong)
	}
	pos := 0
	neg := false
	switch s[0] {
	case '-':
		neg = true
		pos++
	case '+':
		pos++
	}
	intStart := pos
	for pos < len(s) && isDigit(s[pos]) {
		pos++
	}
	intPart := s[intStart:pos]
	fracPart := ""
	if pos < len(s) && s[pos] == '.' {
		pos++
		fracStart := pos
		for pos < len(s) && isDigit(s[pos]) {
			pos++
		}
		fracPart = s[fracStart:pos]
	}
	if intPart == "" && fracPart == "" {
		if pos == len(s) {
			return Quantity{}, parseError(s, "missing digits", ErrFormatWrong)
		}
		return Quantity{}, parseError(s, fmt.Sprintf("expected a digit at offset %d, found %s", pos, quoteRuneAt(s, pos)), ErrFormatWrong)
	}

	format, exp10, binExp, err := parseSuffix(s, pos)
	if err != nil {
		return Quantity{}, err
	}

	// The mantissa is intPart.fracPart; drop its leading zeros.
	digits := strings.TrimLeft(intPart+fracPart, "0")
	if digits == "" {
		return Quantity{Format: format}, nil
	}
	// The value is digits × 10^e (× 2^binExp for binarySI); top is the
	// decimal position of its most significant digit.
	e := exp10 - int64(len(fracPart))
	top := e + int64(len(digits)) - 1

	var q Quantity
	if binExp == 0 {
		if top >= maxDecimalExponent {
			return Quantity{}, parseError(s, fmt.Sprintf("magnitude must be below 1e%d", maxDecimalExponent), ErrRange)
		}
		q = decimalValue(digits, e, top)
	} else {
		q = binaryValue(digits, e, top, binExp)
		if q.cmpAbs(1) < 0 {
			// As in Kubernetes: avoids rendering fractions of a byte in Ki.
			format = DecimalSI
		}
	}
	q.Format = format
	if neg {
		q.Neg()
	}
	return q, nil
}

// parseSuffix interprets s[pos:], the text after the number.
func parseSuffix(s string, pos int) (format Format, exp10 int64, binExp uint, err error) {
	suf := s[pos:]
	switch suf {
	case "":
		return DecimalSI, 0, 0, nil
	case "n":
		return DecimalSI, -9, 0, nil
	case "u":
		return DecimalSI, -6, 0, nil
	case "m":
		return DecimalSI, -3, 0, nil
	case "k":
		return DecimalSI, 3, 0, nil
	case "M":
		return DecimalSI, 6, 0, nil
	case "G":
		return DecimalSI, 9, 0, nil
	case "T":
		return DecimalSI, 12, 0, nil
	case "P":
		return DecimalSI, 15, 0, nil
	case "E":
		return DecimalSI, 18, 0, nil
	case "Ki":
		return BinarySI, 0, 10, nil
	case "Mi":
		return BinarySI, 0, 20, nil
	case "Gi":
		return BinarySI, 0, 30, nil
	case "Ti":
		return BinarySI, 0, 40, nil
	case "Pi":
		return BinarySI, 0, 50, nil
	case "Ei":
		return BinarySI, 0, 60, nil
	}
	// Report the first character no suffix may contain as a syntax error.
	for i := 0; i < len(suf); i++ {
		if !strings.ContainsRune("eEinumkKMGTP+-0123456789", rune(suf[i])) {
			return "", 0, 0, parseError(s, fmt.Sprintf("unexpected %s at offset %d", quoteRuneAt(s, pos+i), pos+i), ErrFormatWrong)
		}
	}
	if suf[0] == 'e' || suf[0] == 'E' {
		if x, ok, inRange := parseExponent(suf[1:]); ok {
			if !inRange {
				return "", 0, 0, parseError(s, fmt.Sprintf("exponent %s does not fit in 32 bits", truncate(suf[1:])), ErrRange)
			}
			return DecimalExponent, x, 0, nil
		}
	}
	return "", 0, 0, parseError(s,
		fmt.Sprintf("suffix %q is not one of n, u, m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei or e/E followed by an integer exponent", truncate(suf)),
		ErrSuffix)
}

// parseExponent reads an optionally signed decimal integer. ok reports
// the syntax; inRange whether the value fits in an int32.
func parseExponent(t string) (x int64, ok, inRange bool) {
	neg := false
	if t != "" && (t[0] == '+' || t[0] == '-') {
		neg = t[0] == '-'
		t = t[1:]
	}
	if t == "" {
		return 0, false, false
	}
	inRange = true
	for i := 0; i < len(t); i++ {
		if !isDigit(t[i]) {
			return 0, false, false
		}
		if x <= math.MaxInt32 {
			x = x*10 + int64(t[i]-'0')
		}
	}
	if neg {
		x = -x
	}
	if x > math.MaxInt32 || x < math.MinInt32 {
		return 0, true, false
	}
	return x, true, true
}

// decimalValue returns digits × 10^e rounded away from zero to nano.
// digits is non-empty without leading zeros, top is its leading position,
// and top < maxDecimalExponent.
func decimalValue(digits string, e, top int64) Quantity {
	if top < nanoExp {
		// Below 1n: rounds up to exactly 1n.
		return Quantity{small: 1, exp: nanoExp}
	}
	roundUp := false
	if e < nanoExp {
		// Keep the digits down to the nano position (at least one, since
		// top >= nanoExp); any non-zero digit past it rounds up.
		keep := int64(len(digits)) - (nanoExp - e)
		roundUp = strings.TrimRight(digits[keep:], "0") != ""
		digits = digits[:keep]
		e = nanoExp
	}
	if !roundUp {
		// Prefer the shortest unscaled form: 1.500 is 15 × 10^-1.
		for e < 0 && len(digits) > 1 && digits[len(digits)-1] == '0' {
			digits = digits[:len(digits)-1]
			e++
		}
	}
	q := Quantity{exp: int32(e)}
	if len(digits) <= 18 {
		q.small, _ = strconv.ParseInt(digits, 10, 64) // cannot fail: <= 18 ASCII digits
		if roundUp {
			q.small++ // may end in zeros again: 0.99999999999 is 1
			q = q.trimZeros()
		}
		return q
	}
	b, _ := new(big.Int).SetString(digits, 10) // cannot fail: ASCII digits
	if roundUp {
		return fromBig(b.Add(b, bigOne), q.exp).trimZeros()
	}
	return fromBig(b, q.exp)
}

// binaryValue returns digits × 10^e × 2^m (e <= 0, m in 10..60) rounded
// away from zero to nano and capped at 2^63-1, as Kubernetes does.
func binaryValue(digits string, e, top int64, m uint) Quantity {
	if top >= 19 {
		// At least 10^19 × 1024: far over the cap.
		return Quantity{small: math.MaxInt64}
	}
	if e == 0 && len(digits) <= 18 {
		n, _ := strconv.ParseInt(digits, 10, 64) // cannot fail
		if n > math.MaxInt64>>m {
			return Quantity{small: math.MaxInt64}
		}
		return Quantity{small: n << m}
	}
	if top < -28 {
		// Below 10^-28 × 2^60 < 1n: rounds up to exactly 1n.
		return Quantity{small: 1, exp: nanoExp}
	}
	if e < binaryKeep {
		// Digits past 10^binaryKeep only matter through being non-zero:
		// scaled by 2^m × 10^9 they stay strictly between two consecutive
		// integers, so replacing them by a single 1 one place further
		// keeps the rounded-up result.
		keep := int64(len(digits)) - (binaryKeep - e)
		sticky := strings.TrimRight(digits[keep:], "0") != ""
		digits = digits[:keep]
		e = binaryKeep
		if sticky {
			digits += "1"
			e--
		}
	}
	n, _ := new(big.Int).SetString(digits, 10) // cannot fail: ASCII digits
	n.Lsh(n, m)
	// n × 10^e is the exact value; express it in units of 1n.
	if shift := e - nanoExp; shift >= 0 {
		n.Mul(n, pow10Big(shift))
	} else {
		n = quoAwayFromZero(n, pow10Big(-shift))
	}
	if n.Cmp(maxBinaryNanos) > 0 {
		return Quantity{small: math.MaxInt64}
	}
	return fromBig(n, nanoExp).trimZeros()
}

// maxBinaryNanos is (2^63-1) × 10^9, the binarySI cap in units of 1n.
var maxBinaryNanos = new(big.Int).Mul(big.NewInt(math.MaxInt64), pow10Big(9))

// parseError builds the error Parse returns for input s.
func parseError(s, detail string, kind error) error {
	return fmt.Errorf("invalid quantity %q: %s: %w", truncate(s), detail, kind)
}

// truncate shortens s for inclusion in an error message.
func truncate(s string) string {
	const max = 64
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// quoteRuneAt quotes the character at byte offset i of s.
func quoteRuneAt(s string, i int) string {
	r, _ := utf8.DecodeRuneInString(s[i:])
	if r == utf8.RuneError {
		return fmt.Sprintf("byte %#02x", s[i])
	}
	return strconv.QuoteRune(r)
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
