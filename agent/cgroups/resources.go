package cgroups

import "strconv"

// Constants of the kubelet's CPU arithmetic.
const (
	MinShares     = 2
	MaxShares     = 262144
	SharesPerCPU  = 1024
	MilliPerCPU   = 1000
	QuotaPeriod   = 100000 // µs: cpu.cfs_period_us and the period of cpu.max
	MinQuotaUsecs = 1000
)

// Resources are the limits of one cgroup. The zero value sets nothing
// beyond the minimum CPU shares.
type Resources struct {
	CPUShares   uint64 // relative weight (cgroup v1 cpu.shares); 0 leaves the default
	CPUQuota    int64  // µs per CPUPeriod; 0 means unlimited
	CPUPeriod   uint64 // µs; QuotaPeriod when CPUQuota is set
	MemoryLimit int64  // bytes; 0 means unlimited
	PIDsLimit   int64  // tasks (pids.max); 0 means unlimited
}

// pidsMax is the pids.max value for a limit: "max" lifts it.
func pidsMax(limit int64) string {
	if limit <= 0 {
		return "max"
	}
	return strconv.FormatInt(limit, 10)
}

// PodResources returns the pod cgroup's limits from the pod-level sums the
// agent computed: shares from the CPU request (always set, minimum 2, as
// the kubelet does, so a best-effort pod gets the least weight), a quota
// from the CPU limit and the memory limit when they are set (> 0).
func PodResources(cpuRequestMilli, cpuLimitMilli, memoryLimit int64) Resources {
	r := Resources{CPUShares: MilliCPUToShares(cpuRequestMilli)}
	if cpuLimitMilli > 0 {
		r.CPUQuota = MilliCPUToQuota(cpuLimitMilli, QuotaPeriod)
		r.CPUPeriod = QuotaPeriod
	}
	if memoryLimit > 0 {
		r.MemoryLimit = memoryLimit
	}
	return r
}

// MilliCPUToShares converts a CPU request in millicores to cpu.shares:
// milli*1024/1000, at least MinShares (also for no request) and at most
// MaxShares.
func MilliCPUToShares(milli int64) uint64 {
	if milli <= 0 {
		return MinShares
	}
	// Divide first when the product could overflow.
	var shares int64
	if milli > (1<<62)/SharesPerCPU {
		shares = milli / MilliPerCPU * SharesPerCPU
	} else {
		shares = milli * SharesPerCPU / MilliPerCPU
	}
	switch {
	case shares < MinShares:
		return MinShares
	case shares > MaxShares:
		return MaxShares
	}
	return uint64(shares)
}

// MilliCPUToQuota converts a CPU limit in millicores to a CFS quota in µs
// per period: milli*period/1000, at least MinQuotaUsecs. A limit of 0 or
// less returns 0 (no quota).
func MilliCPUToQuota(milli, period int64) int64 {
	if milli <= 0 || period <= 0 {
		return 0
	}
	var q int64
	if milli > (1<<62)/period {
		q = milli / MilliPerCPU * period
	} else {
		q = milli * period / MilliPerCPU
	}
	if q < MinQuotaUsecs {
		return MinQuotaUsecs
	}
	return q
}

// SharesToWeight converts cgroup v1 cpu.shares [2, 262144] to cgroup v2
// cpu.weight [1, 10000], the conversion runc and the kubelet use.
func SharesToWeight(shares uint64) uint64 {
	if shares == 0 {
		return 0
	}
	if shares < MinShares {
		shares = MinShares
	}
	if shares > MaxShares {
		shares = MaxShares
	}
	return 1 + ((shares-2)*9999)/262142
}
