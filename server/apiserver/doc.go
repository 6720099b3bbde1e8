// Package apiserver serves skiff's Kubernetes-shaped REST API over a
// storage.Store: list, get, create, update, merge-patch, delete and watch
// for every kind in api.Resources(), their /status subresources, and the
// Status error bodies SPEC.md fixes. Reads and watches honour the Accept
// header: plain JSON, or the meta.k8s.io Tables kubectl asks for, built
// by internal/table (table.go); anything else is 406. For kubectl it also
// serves discovery (aggregated and classic), OpenAPI v3 generated from the
// api types, deployments/{name}/scale, pods/{name}/eviction, and reads the
// protobuf bodies kubectl create's generators send.
//
// It owns request decoding, defaulting and validation calls, the
// create/update strategies (what a write may change) and the translation of
// storage errors into HTTP codes. It does not own TLS, authentication,
// authorization (Config.Authorize is a hook the caller fills with the
// request's Attributes) or any background loop; handlers are safe for
// concurrent use and hold no per-request state outside the request.
package apiserver
