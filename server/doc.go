// Package server will hold skiff's control plane: the REST API, auth, the
// scheduler and the controllers (issues 3, 4 and 8). It depends on api and
// storage and never on agent.
package server
