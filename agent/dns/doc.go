// Package dns is the cluster DNS every agent serves (github.com/miekg/dns),
// in place of CoreDNS.
//
// Records are built in memory from the Services and EndpointSlices the
// agent already watches (agent/proxy's Snapshot), so answers need no I/O
// and keep coming while the server is away:
//
//   - <svc>.<ns>.svc.<domain>: A of the cluster IP, or of each ready
//     endpoint for a headless Service; CNAME for ExternalName;
//   - <hostname>.<svc>.<ns>.svc.<domain> for endpoints whose pod sets
//     hostname and subdomain (and <a-b-c-d>.<svc>... for the others of a
//     headless Service);
//   - _<port>._<proto>.<svc>.<ns>.svc.<domain>: SRV for named ports;
//   - PTR for cluster IPs and headless endpoints; <a-b-c-d>.<ns>.pod.<domain>;
//   - a name that does not exist is NXDOMAIN, and an existing one without
//     the asked type is an empty NOERROR, both with the zone's SOA, whose
//     minimum TTL lets resolvers cache the negative answer.
//
// Other names are forwarded to the node's upstream resolvers, and their
// answers cached (bounded, for their TTL). The server listens where the
// agent tells it (the bridge gateway); the service proxy sends the
// cluster DNS address there.
package dns
