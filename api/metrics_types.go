package api

import (
	"encoding/json"
	"fmt"
	"time"
)

// UsageReport is what an agent measured on its node at one time, sent to
// the server every 15 seconds (POST /api/v1/skiff/nodes/{name}/stats).
// CPU figures are cumulative (nanoseconds of CPU time since the cgroup
// or the machine started): the server derives rates from two reports.
// Memory figures are bytes now. The server keeps reports in memory only.
type UsageReport struct {
	// Time the agent took the reading.
	Time time.Time  `json:"time"`
	Node NodeUsage  `json:"node"`
	Pods []PodUsage `json:"pods,omitempty"`
}

// NodeUsage is the whole machine's use.
type NodeUsage struct {
	CPUUsageNanos uint64 `json:"cpuUsageNanos"`
	// MemoryWorkingSet is usage less inactive file pages, as the
	// kubelet's; MemoryCapacity the machine's memory.
	MemoryWorkingSet uint64 `json:"memoryWorkingSetBytes"`
	MemoryCapacity   uint64 `json:"memoryCapacityBytes,omitempty"`
	// FsCapacity and FsAvailable are of the agent's data dir filesystem.
	FsCapacity  uint64 `json:"fsCapacityBytes,omitempty"`
	FsAvailable uint64 `json:"fsAvailableBytes,omitempty"`
}

// PodUsage is one pod's use: its cgroup's, and its containers'.
type PodUsage struct {
	Namespace        string           `json:"namespace"`
	Name             string           `json:"name"`
	UID              string           `json:"uid"`
	CPUUsageNanos    uint64           `json:"cpuUsageNanos"`
	MemoryWorkingSet uint64           `json:"memoryWorkingSetBytes"`
	MemoryRSS        uint64           `json:"memoryRSSBytes"`
	Network          *NetworkUsage    `json:"network,omitempty"`
	Containers       []ContainerUsage `json:"containers,omitempty"`
}

// NetworkUsage is the bytes a pod's network namespace received and sent
// on its interfaces other than loopback (cumulative).
type NetworkUsage struct {
	RxBytes uint64 `json:"rxBytes"`
	TxBytes uint64 `json:"txBytes"`
}

// ContainerUsage is one container's cgroup use.
type ContainerUsage struct {
	Name             string `json:"name"`
	CPUUsageNanos    uint64 `json:"cpuUsageNanos"`
	MemoryWorkingSet uint64 `json:"memoryWorkingSetBytes"`
	MemoryRSS        uint64 `json:"memoryRSSBytes"`
}

// MetricsGroupVersion is the API of kubectl top (metrics.k8s.io/v1beta1).
const MetricsGroupVersion = "metrics.k8s.io/v1beta1"

// NodeMetrics is metrics.k8s.io/v1beta1 NodeMetrics: a node's CPU (cores)
// and memory (working set) use, averaged over Window ending at Timestamp.
type NodeMetrics struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata"`
	Timestamp  Time         `json:"timestamp"`
	Window     Duration     `json:"window"`
	Usage      ResourceList `json:"usage"`
}

// NodeMetricsList is a list of NodeMetrics.
type NodeMetricsList struct {
	TypeMeta `json:",inline"`
	ListMeta `json:"metadata"`
	Items    []NodeMetrics `json:"items"`
}

// PodMetrics is metrics.k8s.io/v1beta1 PodMetrics: each container's use.
type PodMetrics struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata"`
	Timestamp  Time               `json:"timestamp"`
	Window     Duration           `json:"window"`
	Containers []ContainerMetrics `json:"containers"`
}

// ContainerMetrics is one container's use in a PodMetrics.
type ContainerMetrics struct {
	Name  string       `json:"name"`
	Usage ResourceList `json:"usage"`
}

// PodMetricsList is a list of PodMetrics.
type PodMetricsList struct {
	TypeMeta `json:",inline"`
	ListMeta `json:"metadata"`
	Items    []PodMetrics `json:"items"`
}

// Duration is metav1.Duration: JSON as Go's duration string ("15s").
type Duration struct {
	time.Duration
}

// MarshalJSON writes d as a string.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(d.Duration.String())
}

// UnmarshalJSON reads a duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration: %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration: %w", err)
	}
	d.Duration = v
	return nil
}
