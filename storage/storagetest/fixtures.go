package storagetest

import (
	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/storage/internal/fixtures"
)

// Pod returns a pod shaped like a real one (two containers, env, volumes,
// status): about 1.5 KiB of JSON. labels may be nil.
func Pod(namespace, name string, labels map[string]string) *api.Pod {
	return fixtures.Pod(namespace, name, labels)
}

// Node returns a node with the given labels.
func Node(name string, labels map[string]string) *api.Node { return fixtures.Node(name, labels) }

// ConfigMap returns a config map holding data.
func ConfigMap(namespace, name string, data map[string]string) *api.ConfigMap {
	return fixtures.ConfigMap(namespace, name, data)
}
