// Package objects gives the agent the secrets and configmaps its pods
// use, read from the server with the node's credential and cached in
// memory, so that a pod (re)started while the server is unreachable still
// gets the last good copy. It only reads; it never writes to the server
// or to disk.
package objects
