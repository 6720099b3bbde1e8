// Package peers is the server's end of the peer feed (internal/peerfeed):
// a Feed follows every Node in the store, keeps each one's Peer (name,
// podCIDR, InternalIP), seals the changes of each interval into one
// batch encoded once, and streams the batches to agents.
//
// Why: an agent's pod network used to watch every Node. At a fleet's
// join that is every Node's creation and status writes, whole, to every
// agent — 1,000 agents received 1.1 million Node events (about 1,150
// each), and the server spent 0.7 of a core writing them, one TLS record
// each. The feed writes each agent one record an interval at most, 60
// bytes a changed node, and nothing for the status writes.
//
// Every server runs its own Feed (not only the leader): an agent streams
// from whichever server it is connected to. A batch's revision is the
// store's, so an agent resuming on a restarted or another server either
// gets the batches after its revision, an empty batch when its set's
// hash is already the server's, or the whole set.
package peers
