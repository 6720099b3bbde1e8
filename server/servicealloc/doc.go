// Package servicealloc hands out Service cluster IPs from --service-cidr
// and node ports from --service-node-port-range.
//
// Allocator is bookkeeping in memory: each server's cache of which
// addresses are taken. The allocation is persisted in the Service objects
// (spec.clusterIP, spec.ports[].nodePort) and made unique by the store:
// Claims names what a Service holds ("clusterip/10.43.0.7",
// "nodeport/30080") and the store refuses, in the write's own
// transaction, a Service whose claims another holds (storage.Options
// Claims). So several servers on one PostgreSQL database never hand out
// one address twice, and a restart can neither lose nor duplicate one.
//
// The API server rebuilds the Allocator from the stored Services at start
// (Load), reserves before it writes a Service and gives back what the
// write did not keep (see Reservation), so two concurrent creates on one
// server never pick the same address. When the store refuses a write
// because another server took what this one picked, Reservation.Held
// keeps the slot taken and says whether picking again can help; Resync
// rebuilds the cache from the store when another server may have freed
// addresses.
//
// It must not touch the store or any object; it only answers which
// addresses are free.
package servicealloc
