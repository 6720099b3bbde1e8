package cgroups

import (
	"testing"
)

func TestMilliCPUToShares(t *testing.T) {
	for _, tc := range []struct {
		milli int64
		want  uint64
	}{
		{0, 2}, {-5, 2}, {1, 2}, {2, 2}, {10, 10}, {100, 102}, {250, 256}, {1000, 1024},
		{2500, 2560}, {1 << 40, MaxShares}, {1<<62 + 1, MaxShares},
	} {
		if got := MilliCPUToShares(tc.milli); got != tc.want {
			t.Errorf("MilliCPUToShares(%d) = %d; want %d", tc.milli, got, tc.want)
		}
	}
}

func TestMilliCPUToQuota(t *testing.T) {
	for _, tc := range []struct {
		milli, period, want int64
	}{
		{0, QuotaPeriod, 0}, {-1, QuotaPeriod, 0}, {5, QuotaPeriod, MinQuotaUsecs}, {10, QuotaPeriod, 1000},
		{500, QuotaPeriod, 50000}, {1000, QuotaPeriod, 100000}, {2500, QuotaPeriod, 250000},
		{100, 0, 0},
	} {
		if got := MilliCPUToQuota(tc.milli, tc.period); got != tc.want {
			t.Errorf("MilliCPUToQuota(%d, %d) = %d; want %d", tc.milli, tc.period, got, tc.want)
		}
	}
}

func TestSharesToWeight(t *testing.T) {
	for _, tc := range []struct {
		shares, want uint64
	}{
		{0, 0}, {1, 1}, {2, 1}, {1024, 39}, {MaxShares, 10000}, {1 << 30, 10000},
	} {
		if got := SharesToWeight(tc.shares); got != tc.want {
			t.Errorf("SharesToWeight(%d) = %d; want %d", tc.shares, got, tc.want)
		}
	}
}

func TestPodResources(t *testing.T) {
	for _, tc := range []struct {
		name          string
		req, lim, mem int64
		want          Resources
	}{
		{"besteffort", 0, 0, 0, Resources{CPUShares: 2}},
		{"burstable", 250, 0, 0, Resources{CPUShares: 256}},
		{"guaranteed", 500, 500, 64 << 20, Resources{CPUShares: 512, CPUQuota: 50000, CPUPeriod: QuotaPeriod, MemoryLimit: 64 << 20}},
		{"negative memory ignored", 0, 0, -1, Resources{CPUShares: 2}},
	} {
		if got := PodResources(tc.req, tc.lim, tc.mem); got != tc.want {
			t.Errorf("%s: PodResources(%d, %d, %d) = %+v; want %+v", tc.name, tc.req, tc.lim, tc.mem, got, tc.want)
		}
	}
}

func TestV2Values(t *testing.T) {
	got := v2Values(Resources{CPUShares: 1024, CPUQuota: 50000, CPUPeriod: QuotaPeriod, MemoryLimit: 1 << 20, PIDsLimit: 100})
	want := []v2Value{{"cpu.weight", "39"}, {"cpu.max", "50000 100000"}, {"memory.max", "1048576"}, {"pids.max", "100"}}
	if len(got) != len(want) {
		t.Fatalf("v2Values = %v; want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("v2Values[%d] = %v; want %v", i, got[i], want[i])
		}
	}
	got = v2Values(Resources{})
	want = []v2Value{{"cpu.max", "max 100000"}, {"memory.max", "max"}, {"pids.max", "max"}}
	if len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("v2Values(zero) = %v; want %v", got, want)
	}
}
