// Command kinebench compares durable creates at 64 writers on one private
// PostgreSQL cluster (fsync on, internal/pgtest): skiff's store against
// kine (github.com/k3s-io/kine, built from its public source by whoever
// runs this; no kine code is here). Each round gives both a fresh
// database of the same cluster; skiff's store connects over the Unix
// socket, kine over the same socket URL. kine is driven as the Kubernetes
// API server drives etcd: a transaction that puts a key if its create
// revision is 0, with a pod's JSON as the value (the same pod skiff
// stores). See docs/benchmarks.md for how to build kine and run this.
//
// It is its own module so that skiff's go.mod does not gain the etcd
// client.
package main
