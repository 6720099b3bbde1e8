// Package leader elects the one server, among those sharing a datastore,
// that runs the singleton loops: scheduler, controllers, node IPAM and
// node lifecycle. It campaigns for a lease in the store
// (storage.AcquireLease), renews it every RenewInterval, and runs the
// caller's function for each term with a context that carries the
// term's fence (storage.WithFence), so a deposed leader's writes are
// refused by the store even before it notices. It owns nothing else; on
// SQLite the store grants the lease at once and for good.
package leader
