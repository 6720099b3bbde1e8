// Package patch applies the three patch formats Kubernetes clients send to
// an object's JSON: RFC 7386 JSON merge patch (Merge), RFC 6902 JSON patch
// (JSON) and Kubernetes strategic merge patch (Strategic), whose list merge
// behaviour comes from patchStrategy and patchMergeKey struct tags on the
// Go type of the object.
//
// It works on JSON bytes only: it decodes numbers as json.Number so they
// stay exact, never returns a partial result (a patch either applies as a
// whole or returns an error), and its output is deterministic (object keys
// sorted). It depends on nothing of skiff's, does no I/O and keeps no
// state, so every function is safe for concurrent use. Validating the
// patched object is the caller's job.
package patch
