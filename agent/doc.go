// Package agent will hold skiff's node agent: the sync loop, pod workers,
// the containerd runtime, pod cgroups, networking and eviction (issues 5–7).
// It depends on api and never on server or storage.
package agent
