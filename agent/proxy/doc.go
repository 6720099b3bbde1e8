// Package proxy turns the cluster's Services and EndpointSlices into the
// node's service rules, and keeps them while the server is away.
//
// Build is the pure part: from the Services, their EndpointSlices, the
// node's name and the addresses the node answers itself (the cluster DNS),
// it derives one Port per Service port — cluster IP, node port, traffic
// policies and the endpoints traffic may go to. Watcher feeds it: it lists
// and watches Services and EndpointSlices with the node's credential
// (read-only), writes a checkpoint after every change and starts from the
// checkpoint when the server cannot be reached, so a node that restarts
// during an outage still routes to the last known endpoints.
//
// Programming the rules (nftables, conntrack) belongs to agent/network;
// this package touches nothing of the host.
package proxy
