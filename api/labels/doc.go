// Package labels implements Kubernetes-style label sets and label selectors.
//
// It owns three things:
//
//   - [Set], a plain map of label keys to values, and the small [Labels]
//     interface that selectors match against;
//   - [Requirement] and [Selector], the parsed form of a label selector,
//     together with [Parse], which accepts the full Kubernetes selector
//     string syntax (equality-based and set-based), and [Selector.String],
//     which renders the canonical form that Parse accepts again;
//   - the validation helpers for label keys, label values and DNS-1123 names
//     ([IsQualifiedName], [IsValidLabelValue], [IsDNS1123Subdomain],
//     [IsDNS1123Label]), whose messages follow the wording used by
//     Kubernetes so that API errors look familiar to its users.
//
// The package is pure: it performs no I/O, keeps no global mutable state and
// is safe for concurrent use. Selectors are immutable values; methods that
// "modify" a selector return a new one.
//
// # Selector syntax
//
// A selector is a comma-separated list of requirements, all of which must
// hold (logical AND). Whitespace between tokens is ignored.
//
//	key=value      key==value     key!=value
//	key in (v1,v2) key notin (v1, v2)
//	key            !key
//	key>10         key<10
//
// The empty string selects everything. Following Kubernetes:
//
//   - "!=" and "notin" also match objects that do not carry the key at all;
//     "=", "==", "in", ">" and "<" never match a missing key.
//   - ">" and "<" compare the label value and the requirement value as
//     base-10 64-bit integers; a label value that is not an integer does not
//     match.
//   - An omitted value means the empty string: "key=" selects key with an
//     empty value, and "key in ()" is the same as "key in (\"\")". Empty
//     values may also appear inside a list, as in "key in (,a)".
//
// One deliberate extension: the words "in" and "notin" are accepted as label
// keys (Kubernetes rejects them in key position), so that the String form of
// every valid [Requirement] parses again.
package labels
