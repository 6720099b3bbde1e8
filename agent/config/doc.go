// Package config merges the agent's sources of desired pods — the
// server's assignment stream, static pod files and the local checkpoint —
// into one channel of PodUpdates with the kubelet's operations (ADD,
// UPDATE, DELETE, REMOVE, RECONCILE, RESTORE).
//
// Wiring, in cmd:
//
//	cp, _ := checkpoint.New(checkpoint.Config{Dir: dataDir + "/agent/checkpoint"})
//	m, _ := config.NewMerger(config.MergerConfig{Sources: []string{config.SourceAPI, config.SourceFile}, Checkpoint: cp})
//	_ = m.Restore(ctx, cp.Load()) // RESTORE, before the server answers
//	apiSrc, _ := config.NewAPISource(config.APISourceConfig{Client: nodeClient, NodeName: node}, m)
//	files, _ := config.NewFileSource(config.FileSourceConfig{Dir: dataDir + "/agent/pod-manifests", NodeName: node}, m)
//	go cp.Run(ctx); go apiSrc.Run(ctx); go files.Run(ctx)
//	// the sync loop reads m.Updates() and asks m.SeenAllSources()
//
// The package reads the server (pods bound to the node) and the
// pod-manifests directory; it never writes to either, nor touches
// containers.
package config
