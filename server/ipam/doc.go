// Package ipam gives every Node a /24 pod network out of the server's
// cluster CIDR (--cluster-cidr) and takes it back when the Node goes.
//
// Allocator is the pure part: which /24s are taken by which node. The
// Controller feeds it from the store: at start it lists the Nodes and
// adopts the podCIDRs they carry (the allocation is persisted only by
// being in the Node object, so a restart loses nothing), then follows
// the store's watch, writing spec.podCIDR (and podCIDRs) into Nodes
// that have none and releasing the /24 of a deleted Node. It writes
// through the store directly, never through the API.
//
// It must not touch anything of a Node but spec.podCIDR and
// spec.podCIDRs.
package ipam
