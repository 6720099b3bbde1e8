// Package fields implements Kubernetes-style field selectors, which select
// objects by the values of a few well-known fields such as "metadata.name",
// "metadata.namespace", "spec.nodeName" or "status.phase".
//
// It owns [Set], the field-path-to-value view of an object that selectors
// match against, and [Selector] with its string syntax ([Parse],
// [Selector.String], [EscapeValue], [UnescapeValue]). It does not know which
// fields a given kind of object supports: a server uses
// [Selector.Requirements] to reject unsupported fields and builds the [Set]
// for each object itself.
//
// The package is pure: it performs no I/O, keeps no global mutable state and
// is safe for concurrent use. Selectors are immutable values.
//
// # Selector syntax
//
// A selector is a comma-separated list of terms, all of which must hold
// (logical AND):
//
//	field=value   field==value   field!=value
//
// Whitespace around terms and around the operator is ignored. In values the
// characters '\', ',' and '=' must be escaped with a backslash ("\\", "\,",
// "\="); no other escapes exist. The empty string selects everything.
//
// Following Kubernetes, a field missing from the [Set] is treated as having
// the empty value: "f=" matches an object without f, "f!=x" matches it too,
// and "f=x" does not.
package fields
