package api

import "testing"

func TestQOSClass(t *testing.T) {
	res := func(req, lim ResourceList) Container {
		return Container{Name: "c", Resources: ResourceRequirements{Requests: req, Limits: lim}}
	}
	cpuMem := func(cpu, mem string) ResourceList {
		l := ResourceList{}
		if cpu != "" {
			l[ResourceCPU] = q(cpu)
		}
		if mem != "" {
			l[ResourceMemory] = q(mem)
		}
		return l
	}
	tests := []struct {
		name       string
		containers []Container
		init       []Container
		want       PodQOSClass
	}{
		{"nothing", []Container{{Name: "c"}}, nil, PodQOSBestEffort},
		{"no containers", nil, nil, PodQOSBestEffort},
		{"only other resources", []Container{res(ResourceList{ResourceEphemeralStorage: q("1Gi")}, ResourceList{ResourceEphemeralStorage: q("1Gi")})}, nil, PodQOSBestEffort},
		{"zero quantities", []Container{res(cpuMem("0", "0"), cpuMem("0", "0"))}, nil, PodQOSBestEffort},
		{"equal", []Container{res(cpuMem("1", "1Gi"), cpuMem("1", "1Gi"))}, nil, PodQOSGuaranteed},
		{"equal in other units", []Container{res(cpuMem("1000m", "1024Mi"), cpuMem("1", "1Gi"))}, nil, PodQOSGuaranteed},
		{"limits only", []Container{res(nil, cpuMem("1", "1Gi"))}, nil, PodQOSBurstable},
		{"request below limit", []Container{res(cpuMem("500m", "1Gi"), cpuMem("1", "1Gi"))}, nil, PodQOSBurstable},
		{"memory only", []Container{res(cpuMem("", "1Gi"), cpuMem("", "1Gi"))}, nil, PodQOSBurstable},
		{"requests only", []Container{res(cpuMem("1", ""), nil)}, nil, PodQOSBurstable},
		{"one container best effort", []Container{res(cpuMem("1", "1Gi"), cpuMem("1", "1Gi")), {Name: "d"}}, nil, PodQOSBurstable},
		{"init container counts", []Container{res(cpuMem("1", "1Gi"), cpuMem("1", "1Gi"))}, []Container{res(cpuMem("1", ""), cpuMem("1", ""))}, PodQOSBurstable},
		{"init guaranteed too", []Container{res(cpuMem("1", "1Gi"), cpuMem("1", "1Gi"))}, []Container{res(cpuMem("2", "1Gi"), cpuMem("2", "1Gi"))}, PodQOSGuaranteed},
		{"extra storage ignored", []Container{res(
			ResourceList{ResourceCPU: q("1"), ResourceMemory: q("1Gi"), ResourceEphemeralStorage: q("1Gi")},
			ResourceList{ResourceCPU: q("1"), ResourceMemory: q("1Gi")})}, nil, PodQOSGuaranteed},
		// The kubelet compares sums over containers, not each container.
		{"sums compared", []Container{
			res(cpuMem("2", "1Gi"), cpuMem("1", "1Gi")),
			res(cpuMem("1", "1Gi"), cpuMem("2", "1Gi")),
		}, nil, PodQOSGuaranteed},
	}
	for _, tc := range tests {
		p := &Pod{Spec: PodSpec{Containers: tc.containers, InitContainers: tc.init}}
		if got := QOSClass(p); got != tc.want {
			t.Errorf("QOSClass(%s) = %v; want %v", tc.name, got, tc.want)
		}
	}
	if got := QOSClass(nil); got != PodQOSBestEffort {
		t.Errorf("QOSClass(nil) = %v; want BestEffort", got)
	}
}

func TestSetDefaultsPodQOS(t *testing.T) {
	// Limits only: requests are defaulted to limits first, so Guaranteed.
	p := &Pod{Spec: PodSpec{Containers: []Container{{Name: "c", Image: "x", Resources: ResourceRequirements{
		Limits: ResourceList{ResourceCPU: q("1"), ResourceMemory: q("1Gi")},
	}}}}}
	SetDefaultsPod(p)
	if p.Status.QOSClass != PodQOSGuaranteed {
		t.Errorf("SetDefaultsPod(limits only).status.qosClass = %v; want Guaranteed", p.Status.QOSClass)
	}
	// A stale class in the body is recomputed.
	stale := &Pod{Status: PodStatus{QOSClass: PodQOSGuaranteed}, Spec: PodSpec{Containers: []Container{{Name: "c"}}}}
	SetDefaultsPod(stale)
	if stale.Status.QOSClass != PodQOSBestEffort {
		t.Errorf("SetDefaultsPod(stale class).status.qosClass = %v; want BestEffort", stale.Status.QOSClass)
	}
}
