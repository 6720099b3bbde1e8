// Package servicealloc hands out Service cluster IPs from --service-cidr
// and node ports from --service-node-port-range.
//
// Allocator is pure bookkeeping in memory; the allocation is persisted
// only by being in the Service objects (spec.clusterIP,
// spec.ports[].nodePort), so the API server rebuilds it from the stored
// Services at start (Load) and a restart can neither lose nor duplicate an
// address. The API server reserves before it writes a Service and gives
// back what the write did not keep (see Reservation), so two concurrent
// creates never receive the same address.
//
// It must not touch the store or any object; it only answers which
// addresses are free.
package servicealloc
