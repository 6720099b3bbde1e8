package resource

import (
	"math/big"
	"strconv"
	"strings"
)

// binarySuffixes[k] is the suffix for 1024^k.
var binarySuffixes = [...]string{"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"}

// decimalSuffix returns the decimalSI suffix for 10^exp, if there is one.
func decimalSuffix(exp int64) (string, bool) {
	switch exp {
	case -9:
		return "n", true
	case -6:
		return "u", true
	case -3:
		return "m", true
	case 0:
		return "", true
	case 3:
		return "k", true
	case 6:
		return "M", true
	case 9:
		return "G", true
	case 12:
		return "T", true
	case 15:
		return "P", true
	case 18:
		return "E", true
	}
	return "", false
}

// String returns the canonical form of q, as Kubernetes renders it:
//
//   - Zero is "0" in every format.
//   - DecimalSI: an integer mantissa and the largest decimal suffix (n, u,
//     m, "", k, M, G, T, P, E) that keeps it an integer: "1500m", "5M",
//     "100u". A value needing an exponent past that range (below n or above
//     E) falls back to exponent notation: 10^21 is "1e21".
//   - DecimalExponent: the same mantissa with an exponent that is a
//     multiple of three: "1e3", "12e6", "1500" (no "e0"), "80e-3".
//   - BinarySI: if q is a whole number of magnitude 1024 or more, an
//     integer mantissa and the largest binary suffix that keeps it an
//     integer: "1536Mi", "1Gi", "1025". Otherwise (a fraction, or strictly
//     between -1024 and 1024) the value is rendered as DecimalSI: "500m",
//     "5". The largest binary suffix is Ei, so 2^70 is "1024Ei".
//   - Any other Format renders as DecimalExponent.
//
// A negative value is the same with a leading "-"; a positive value has no
// sign.
//
// Parse(q.String()) always has the same value as q, but not always the same
// Format: text without a suffix parses as DecimalSI, so BinarySI 10^9,
// rendered "1000000000", re-parses as DecimalSI and then renders as "1G"
// (Kubernetes behaves the same). The value differs only in that a
// binarySI rendering of 2^63 or more (reachable only through Add or Sub)
// parses back capped at 2^63-1, and a decimal rendering of 10^1000 or more
// (likewise) does not parse.
func (q Quantity) String() string {
	if q.IsZero() {
		return "0"
	}
	format := q.Format
	switch format {
	case DecimalSI, DecimalExponent:
	case BinarySI:
		if q.cmpAbs(1024) < 0 {
			format = DecimalSI
		} else if s, ok := q.binaryString(); ok {
			return s
		} else {
			format = DecimalSI // not a whole number: keep the precision
		}
	default:
		format = DecimalExponent
	}
	return q.decimalString(format)
}

// decimalString renders non-zero q in DecimalSI or DecimalExponent form.
func (q Quantity) decimalString(format Format) string {
	neg := q.Sign() < 0
	var digits string
	if q.big != nil {
		digits = new(big.Int).Abs(q.big).String()
	} else {
		u := uint64(q.small)
		if neg {
			u = -u // correct for math.MinInt64 too
		}
		digits = strconv.FormatUint(u, 10)
	}
	exp := int64(q.exp)
	trimmed := strings.TrimRight(digits, "0")
	exp += int64(len(digits) - len(trimmed))
	digits = trimmed
	// Make the exponent a multiple of three by growing the mantissa.
	switch exp % 3 {
	case 1, -2:
		digits += "0"
		exp--
	case 2, -1:
		digits += "00"
		exp -= 2
	}
	suffix, ok := "", false
	if format == DecimalSI {
		suffix, ok = decimalSuffix(exp)
	}
	if !ok && exp != 0 {
		suffix = "e" + strconv.FormatInt(exp, 10)
	}
	var b strings.Builder
	b.Grow(len(digits) + len(suffix) + 1)
	if neg {
		b.WriteByte('-')
	}
	b.WriteString(digits)
	b.WriteString(suffix)
	return b.String()
}

// binaryString renders q with a binary suffix, or reports false if q is
// not a whole number.
func (q Quantity) binaryString() (string, bool) {
	neg := q.Sign() < 0
	sign := ""
	if neg {
		sign = "-"
	}
	if q.big == nil && q.exp <= 0 && int(-q.exp) < len(pow10Int64) {
		p := pow10Int64[-q.exp]
		if q.small%p != 0 {
			return "", false
		}
		u := uint64(q.small / p)
		if neg {
			u = -u
		}
		k := 0
		for k < len(binarySuffixes)-1 && u%1024 == 0 {
			u >>= 10
			k++
		}
		return sign + strconv.FormatUint(u, 10) + binarySuffixes[k], true
	}
	var n *big.Int
	if q.exp >= 0 {
		n = new(big.Int).Mul(q.unscaled(), pow10Big(int64(q.exp)))
	} else {
		quo, rem := new(big.Int).QuoRem(q.unscaled(), pow10Big(-int64(q.exp)), new(big.Int))
		if rem.Sign() != 0 {
			return "", false
		}
		n = quo
	}
	n.Abs(n)
	k := min(int(n.TrailingZeroBits()/10), len(binarySuffixes)-1)
	n.Rsh(n, uint(10*k))
	return sign + n.String() + binarySuffixes[k], true
}
