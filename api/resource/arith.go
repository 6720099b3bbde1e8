package resource

import (
	"cmp"
	"math"
	"math/big"
	"strconv"
)

var bigOne = big.NewInt(1)

// pow10Int64[n] is 10^n.
var pow10Int64 = [...]int64{
	1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9,
	1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18,
}

// pow10Big returns a new big.Int holding 10^n, n >= 0.
func pow10Big(n int64) *big.Int {
	if n < int64(len(pow10Int64)) {
		return big.NewInt(pow10Int64[n])
	}
	return new(big.Int).Exp(big.NewInt(10), big.NewInt(n), nil)
}

// fromBig returns the Quantity b × 10^exp, taking ownership of b. It keeps
// the invariant that big is only used for values that do not fit an int64.
func fromBig(b *big.Int, exp int32) Quantity {
	if b.IsInt64() {
		v := b.Int64()
		if v == 0 {
			return Quantity{}
		}
		return Quantity{small: v, exp: exp}
	}
	return Quantity{big: b, exp: exp}
}

// unscaled returns the unscaled value. The result may be q's own big.Int:
// callers must not modify it.
func (q Quantity) unscaled() *big.Int {
	if q.big != nil {
		return q.big
	}
	return big.NewInt(q.small)
}

// trimZeros moves factors of ten from the unscaled value into a negative
// exponent, giving the shortest form of the same value.
func (q Quantity) trimZeros() Quantity {
	if q.big == nil {
		for q.exp < 0 && q.small != 0 && q.small%10 == 0 {
			q.small /= 10
			q.exp++
		}
		return q
	}
	b, exp := q.big, q.exp
	ten := big.NewInt(10)
	for exp < 0 {
		quo, rem := new(big.Int).QuoRem(b, ten, new(big.Int))
		if rem.Sign() != 0 {
			break
		}
		b, exp = quo, exp+1
	}
	r := fromBig(b, exp)
	r.Format = q.Format
	return r
}

// quoAwayFromZero returns a new big.Int holding n/d rounded away from zero
// (d > 0). Neither argument is modified.
func quoAwayFromZero(n, d *big.Int) *big.Int {
	quo, rem := new(big.Int).QuoRem(n, d, new(big.Int))
	switch {
	case rem.Sign() == 0:
	case n.Sign() > 0:
		quo.Add(quo, bigOne)
	default:
		quo.Sub(quo, bigOne)
	}
	return quo
}

// mulPow10 returns v × 10^n (n >= 0) and whether it fits in an int64.
func mulPow10(v int64, n int64) (int64, bool) {
	if v == 0 {
		return 0, true
	}
	if n >= int64(len(pow10Int64)) {
		return 0, false
	}
	p := pow10Int64[n]
	if v > math.MaxInt64/p || v < math.MinInt64/p {
		return 0, false
	}
	return v * p, true
}

// alignSmall rewrites a × 10^ea and b × 10^eb over the smaller exponent,
// reporting false if that overflows an int64.
func alignSmall(a int64, ea int32, b int64, eb int32) (int64, int64, int32, bool) {
	switch {
	case ea > eb:
		a2, ok := mulPow10(a, int64(ea)-int64(eb))
		return a2, b, eb, ok
	case eb > ea:
		b2, ok := mulPow10(b, int64(eb)-int64(ea))
		return a, b2, ea, ok
	}
	return a, b, ea, true
}

// alignBig returns the unscaled values of x and y over their smaller
// exponent. The results may be x's or y's own big.Int: do not modify them.
func alignBig(x, y Quantity) (a, b *big.Int, exp int32) {
	a, b, exp = x.unscaled(), y.unscaled(), min(x.exp, y.exp)
	if x.exp > exp {
		a = new(big.Int).Mul(a, pow10Big(int64(x.exp)-int64(exp)))
	}
	if y.exp > exp {
		b = new(big.Int).Mul(b, pow10Big(int64(y.exp)-int64(exp)))
	}
	return a, b, exp
}

// IsZero reports whether q is zero, whatever its Format.
func (q Quantity) IsZero() bool {
	return q.big == nil && q.small == 0
}

// Sign returns -1, 0 or +1 as q is negative, zero or positive.
func (q Quantity) Sign() int {
	if q.big != nil {
		return q.big.Sign()
	}
	return cmp.Compare(q.small, 0)
}

// Cmp compares the values of q and y, ignoring their formats, and returns
// -1, 0 or +1 as q is less than, equal to or greater than y.
func (q Quantity) Cmp(y Quantity) int {
	qs, ys := q.Sign(), y.Sign()
	if qs != ys || qs == 0 {
		return cmp.Compare(qs, ys)
	}
	if q.big == nil && y.big == nil {
		if a, b, _, ok := alignSmall(q.small, q.exp, y.small, y.exp); ok {
			return cmp.Compare(a, b)
		}
	}
	a, b, _ := alignBig(q, y)
	return a.Cmp(b)
}

// CmpInt64 compares the value of q with y, as Cmp does.
func (q Quantity) CmpInt64(y int64) int {
	return q.Cmp(Quantity{small: y})
}

// Equal reports whether q and y have the same value, ignoring their
// formats. It lets go-cmp and similar tools compare quantities.
func (q Quantity) Equal(y Quantity) bool {
	return q.Cmp(y) == 0
}

// cmpAbs compares |q| with n >= 0.
func (q Quantity) cmpAbs(n int64) int {
	if q.Sign() < 0 {
		q.Neg()
	}
	return q.Cmp(Quantity{small: n})
}

// Neg negates q in place, keeping its Format.
func (q *Quantity) Neg() {
	switch {
	case q.big != nil:
		r := fromBig(new(big.Int).Neg(q.big), q.exp)
		q.small, q.big = r.small, r.big
	case q.small == math.MinInt64:
		q.big = new(big.Int).Neg(big.NewInt(q.small))
		q.small = 0
	default:
		q.small = -q.small
	}
}

// Add sets q to q + y, exactly. If q is zero it takes y's Format, as in
// Kubernetes; otherwise it keeps its own.
func (q *Quantity) Add(y Quantity) { q.add(y, false) }

// Sub sets q to q - y, exactly. If q is zero it takes y's Format, as in
// Kubernetes; otherwise it keeps its own.
func (q *Quantity) Sub(y Quantity) { q.add(y, true) }

func (q *Quantity) add(y Quantity, sub bool) {
	format := q.Format
	if q.IsZero() {
		format = y.Format
	}
	var r Quantity
	switch {
	case y.IsZero():
		r = *q
	case q.IsZero():
		r = y
		if sub {
			r.Neg()
		}
	default:
		r = sum(*q, y, sub)
	}
	r.Format = format
	*q = r
}

// sum returns x + y, or x - y when sub is set; the result has no Format.
func sum(x, y Quantity, sub bool) Quantity {
	if x.big == nil && y.big == nil {
		if a, b, exp, ok := alignSmall(x.small, x.exp, y.small, y.exp); ok && !(sub && b == math.MinInt64) {
			if sub {
				b = -b
			}
			if (b > 0 && a <= math.MaxInt64-b) || (b <= 0 && a >= math.MinInt64-b) {
				if a+b == 0 {
					return Quantity{}
				}
				return Quantity{small: a + b, exp: exp}
			}
		}
	}
	a, b, exp := alignBig(x, y)
	r := new(big.Int)
	if sub {
		r.Sub(a, b)
	} else {
		r.Add(a, b)
	}
	return fromBig(r, exp)
}

// Value returns q rounded to an integer away from zero (1.1 is 2, -1.1 is
// -2), as Kubernetes does. A value beyond the int64 range saturates to
// math.MaxInt64 or math.MinInt64 (Kubernetes leaves overflow undefined).
func (q Quantity) Value() int64 { return q.scaledValue(0) }

// MilliValue returns q × 1000 rounded to an integer away from zero, as
// Kubernetes does ("1.0001m" is 2). A value beyond the int64 range
// saturates to math.MaxInt64 or math.MinInt64.
func (q Quantity) MilliValue() int64 { return q.scaledValue(3) }

// scaledValue returns q × 10^k rounded away from zero, saturated to int64.
func (q Quantity) scaledValue(k int32) int64 {
	sign := q.Sign()
	if sign == 0 {
		return 0
	}
	saturated := int64(math.MaxInt64)
	if sign < 0 {
		saturated = math.MinInt64
	}
	n := int64(q.exp) + int64(k)
	if q.big == nil {
		if n >= 0 {
			if v, ok := mulPow10(q.small, n); ok {
				return v
			}
			return saturated
		}
		if -n >= int64(len(pow10Int64)) {
			return int64(sign) // |small| < 10^19 <= 10^-n
		}
		p := pow10Int64[-n]
		v := q.small / p
		if q.small%p != 0 {
			v += int64(sign)
		}
		return v
	}
	if n >= 0 {
		return saturated // big never fits an int64, and n >= 0 only grows it
	}
	r := quoAwayFromZero(q.big, pow10Big(-n))
	if r.IsInt64() {
		return r.Int64()
	}
	return saturated
}

// AsApproximateFloat64 returns the float64 nearest to q. Values beyond the
// float64 range return +Inf or -Inf.
func (q Quantity) AsApproximateFloat64() float64 {
	if q.big == nil && q.exp == 0 {
		return float64(q.small)
	}
	var s string
	if q.big != nil {
		s = q.big.String()
	} else {
		s = strconv.FormatInt(q.small, 10)
	}
	// ParseFloat rounds correctly and returns ±Inf (with an error we do
	// not need) on overflow.
	f, _ := strconv.ParseFloat(s+"e"+strconv.Itoa(int(q.exp)), 64)
	return f
}

// DeepCopy returns a copy of q. Since a Quantity never mutates the big
// integer it may share with its copies, this is the same as assigning q;
// the method exists for generated deep-copy code written for Kubernetes.
func (q Quantity) DeepCopy() Quantity { return q }

// DeepCopyInto copies q into out, like DeepCopy.
func (q *Quantity) DeepCopyInto(out *Quantity) { *out = *q }
