// Package peerfeed is the pod network's view of the cluster, as the
// server streams it to agents: each Node's name, podCIDR and InternalIP
// (a Peer), and nothing else of the Node.
//
// An agent's pod network needs every other node's podCIDR and address
// (the overlay's routes and forwarding entries). Watching Nodes for them
// costs O(nodes²) at a fleet's join: every Node's creation and status
// writes go, whole, to every agent, one event and one write each. The
// feed sends 60 bytes a node instead of a whole Node, and only when one
// of those three fields changes; the server seals the changes of each
// interval into one Batch, encoded once and written to every agent's
// stream in one write.
//
// A stream is lines of JSON, one Batch each. The first is either the
// whole set (Full) or, for an agent that says where it was (Since, with
// the Hash of its set), the batches after it, or an empty batch when its
// set is already the server's (after a server restart, when nothing
// changed). Every batch carries the Hash of the whole set after it, so
// an agent that misapplied one notices and asks for the whole set again.
//
// Set is the set with its order-free hash, kept by both ends.
package peerfeed
