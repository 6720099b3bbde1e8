// Package resource implements Kubernetes resource quantities ("100m",
// "64Mi", "1.5", "12e6"): parsing, canonical formatting, exact arithmetic
// and JSON encoding, with the same observable behaviour as
// k8s.io/apimachinery/pkg/api/resource.Quantity.
//
// It owns one value type, [Quantity], its [Format] (how the value is
// rendered) and the [Parse] function. It does not own ResourceList, which
// the api package defines as a map of resource names to quantities.
//
// The package is pure: it performs no I/O, keeps no global mutable state and
// is safe for concurrent use. A Quantity is safe to copy by value: the big
// integer it may hold internally is never mutated once stored, so copies do
// not alias each other's state.
//
// # Syntax
//
// Parse accepts exactly the serialization grammar documented by Kubernetes:
//
//	<quantity>        ::= <signedNumber><suffix>
//	<signedNumber>    ::= <number> | <sign><number>
//	<sign>            ::= "+" | "-"
//	<number>          ::= <digits> | <digits>.<digits> | <digits>. | .<digits>
//	<suffix>          ::= <binarySI> | <decimalExponent> | <decimalSI>
//	<binarySI>        ::= Ki | Mi | Gi | Ti | Pi | Ei
//	<decimalSI>       ::= n | u | m | "" | k | M | G | T | P | E
//	<decimalExponent> ::= "e" <sign>? <digits> | "E" <sign>? <digits>
//
// that is, the regular expression
//
//	^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([numkMGTPE]|[KMGTPE]i|[eE][+-]?[0-9]+)?$
//
// No whitespace is allowed. The Kubernetes scanner is a little looser than
// its own documented grammar: it reads "-", "+", "." and a suffix with no
// digits ("Ki", "m", "e3") as zero. This package rejects those, since a
// number without digits is almost certainly a mistake.
//
// # Values
//
// Values are exact decimals; nothing is ever held in a float. As in
// Kubernetes, parsing keeps precision only down to nano (10^-9): a finer
// non-zero value is rounded away from zero, so "0.1n" is 1n and "-1.5n" is
// -2n. A binarySI value ("Ki" ... "Ei") is capped, silently, at 2^63-1 in
// magnitude ("9Ei" parses as 9223372036854775807), and a binarySI value
// strictly between -1 and 1 switches to the DecimalSI format.
//
// Kubernetes does not bound decimal values, which lets a short string such
// as "1e2000000000" make later comparisons allocate gigabytes. This package
// rejects, with an error wrapping [ErrRange], any non-zero decimal value
// whose magnitude is 10^1000 or more, and any exponent that does not fit in
// 32 bits (Kubernetes rejects the latter too). A value below 1n in magnitude
// is not an error: it rounds to ±1n as in Kubernetes. With these bounds the
// cost of every operation is linear in the length of the input.
//
// # Canonical form
//
// [Quantity.String] renders the canonical form Kubernetes produces: no
// fractional digits, the largest suffix that keeps the mantissa an integer,
// and the suffix family of the Format the value was parsed with. "0.5" is
// "500m", "1.5Gi" is "1536Mi", "5000k" is "5M", "1e3" stays "1e3", and zero
// is always "0". See [Quantity.String] for the details.
package resource
