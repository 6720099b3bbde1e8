package eviction

import (
	"strings"
	"testing"
	"time"
)

func TestParseConfigDefaults(t *testing.T) {
	cfg, err := ParseConfig(nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, th := range cfg.Thresholds {
		got = append(got, th.String())
	}
	want := "hard memory.available<100Mi,hard nodefs.available<10%,hard imagefs.available<15%,hard nodefs.inodesFree<5%"
	if strings.Join(got, ",") != want {
		t.Errorf("default thresholds = %v; want %s", got, want)
	}
	if cfg.PressureTransitionPeriod != 30*time.Second || cfg.MaxPods != 110 || cfg.MonitorInterval != time.Second {
		t.Errorf("defaults = %+v; want 30s transition, 110 pods, 1s interval", cfg)
	}
}

func TestParseConfigSoftGraceMinReclaim(t *testing.T) {
	cfg, err := ParseConfig(map[string]string{
		"eviction-hard":                       "memory.available<200Mi, pid.available<5%",
		"eviction-soft":                       "memory.available<500Mi,nodefs.available<2Gi",
		"eviction-soft-grace-period":          "memory.available=1m30s,nodefs.available=10s",
		"eviction-minimum-reclaim":            "memory.available=100Mi,nodefs.available=5%",
		"eviction-pressure-transition-period": "1m",
		"eviction-max-pod-grace-period":       "20",
		"max-pods":                            "12",
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Thresholds) != 4 {
		t.Fatalf("thresholds = %v; want 4", cfg.Thresholds)
	}
	mem, pid, softMem, softFs := cfg.Thresholds[0], cfg.Thresholds[1], cfg.Thresholds[2], cfg.Thresholds[3]
	if !mem.Hard || mem.Value.Quantity != 200*mi || mem.MinReclaim.Quantity != 100*mi || mem.GracePeriod != 0 {
		t.Errorf("hard memory = %+v", mem)
	}
	if !pid.Hard || pid.Value.Percentage != 0.05 {
		t.Errorf("hard pid = %+v", pid)
	}
	if softMem.Hard || softMem.GracePeriod != 90*time.Second || softMem.Value.Quantity != 500*mi || softMem.MinReclaim.Quantity != 100*mi {
		t.Errorf("soft memory = %+v", softMem)
	}
	if softFs.GracePeriod != 10*time.Second || softFs.Value.Quantity != 2*gi || softFs.MinReclaim.Percentage != 0.05 {
		t.Errorf("soft nodefs = %+v", softFs)
	}
	if cfg.PressureTransitionPeriod != time.Minute || cfg.MaxPodGracePeriodSeconds != 20 || cfg.MaxPods != 12 {
		t.Errorf("cfg = %+v", cfg)
	}
}

func TestParseConfigZeroPercentDisablesAndEmptyHard(t *testing.T) {
	cfg, err := ParseConfig(map[string]string{"eviction-hard": "memory.available<0%,nodefs.available<100%"})
	if err != nil || len(cfg.Thresholds) != 0 {
		t.Errorf("ParseConfig(0%%,100%%) = %v, %v; want no thresholds", cfg.Thresholds, err)
	}
	cfg, err = ParseConfig(map[string]string{"eviction-hard": ""})
	if err != nil || len(cfg.Thresholds) != 0 {
		t.Errorf("ParseConfig(empty hard) = %v, %v; want no thresholds", cfg.Thresholds, err)
	}
}

func TestParseConfigErrorsNameTheBadPart(t *testing.T) {
	tests := []struct {
		flags map[string]string
		want  string // substrings of the error
	}{
		{map[string]string{"eviction-hard": "memory.available>1Gi"}, `eviction-hard: "memory.available>1Gi"`},
		{map[string]string{"eviction-hard": "memory.avail<1Gi"}, `unknown signal "memory.avail"`},
		{map[string]string{"eviction-hard": "memory.available<1Gi,memory.available<2Gi"}, "appears twice"},
		{map[string]string{"eviction-hard": "memory.available<lots"}, `bad quantity "lots"`},
		{map[string]string{"eviction-hard": "memory.available<-1Mi"}, "must be positive"},
		{map[string]string{"eviction-hard": "nodefs.available<150%"}, `percentage "150%"`},
		{map[string]string{"eviction-hard": "nodefs.available<x%"}, `bad percentage "x%"`},
		{map[string]string{"eviction-soft": "memory.available<1Gi"}, "eviction-soft: memory.available: no grace period"},
		{map[string]string{"eviction-soft-grace-period": "memory.available=1m"}, "eviction-soft-grace-period: memory.available: no soft threshold"},
		{map[string]string{"eviction-soft": "memory.available<1Gi", "eviction-soft-grace-period": "memory.available=soon"}, `"soon" is not a non-negative duration`},
		{map[string]string{"eviction-soft-grace-period": "memory.available"}, "want signal=value"},
		{map[string]string{"eviction-minimum-reclaim": "disk=1Gi"}, `unknown signal "disk"`},
		{map[string]string{"eviction-minimum-reclaim": "memory.available=-5Mi"}, "eviction-minimum-reclaim"},
		{map[string]string{"eviction-pressure-transition-period": "-1s"}, "eviction-pressure-transition-period"},
		{map[string]string{"eviction-max-pod-grace-period": "forever"}, "eviction-max-pod-grace-period"},
		{map[string]string{"max-pods": "-3"}, "max-pods"},
	}
	for _, tc := range tests {
		_, err := ParseConfig(tc.flags)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseConfig(%v) = %v; want an error containing %q", tc.flags, err, tc.want)
		}
	}
}

func TestValueResolve(t *testing.T) {
	tests := []struct {
		v    Value
		capa int64
		want int64
	}{
		{Value{Quantity: 100 * mi}, gi, 100 * mi},
		{Value{Percentage: 0.1}, 1000, 100},
		{Value{Percentage: 0.05}, 999, 50},
	}
	for _, tc := range tests {
		if got := tc.v.Resolve(tc.capa); got != tc.want {
			t.Errorf("%v.Resolve(%d) = %d; want %d", tc.v, tc.capa, got, tc.want)
		}
	}
}
