package eviction

import "testing"

// FuzzParseConfig: no flag value panics; a parsed config validates.
func FuzzParseConfig(f *testing.F) {
	f.Add("memory.available<100Mi,nodefs.available<10%", "memory.available<300Mi", "memory.available=1m30s", "memory.available=0.5Gi", "30s")
	f.Add("", "", "", "", "")
	f.Add("pid.available<5%", "nodefs.inodesFree<1000", "nodefs.inodesFree=10s", "x=y", "-1s")
	f.Fuzz(func(t *testing.T, hard, soft, grace, reclaim, transition string) {
		cfg, err := ParseConfig(map[string]string{
			"eviction-hard": hard, "eviction-soft": soft, "eviction-soft-grace-period": grace,
			"eviction-minimum-reclaim": reclaim, "eviction-pressure-transition-period": transition,
		})
		if err != nil {
			return
		}
		if err := cfg.Validate(); err != nil {
			t.Fatalf("ParseConfig accepted a config that does not validate: %v", err)
		}
	})
}

// FuzzParseMeminfo: any /proc/meminfo text parses or is refused, without
// a panic, and a parsed working set never exceeds the capacity.
func FuzzParseMeminfo(f *testing.F) {
	f.Add([]byte("MemTotal: 100 kB\nMemFree: 10 kB\nInactive(file): 5 kB\n"))
	f.Add([]byte("MemTotal: 1 kB\nMemFree: 9 kB\nInactive(file): 0 kB"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := parseMeminfo(b)
		if err == nil && uint64(m.WorkingSet) > uint64(m.Capacity) {
			t.Fatalf("working set %d above capacity %d", m.WorkingSet, m.Capacity)
		}
	})
}
