package eviction

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	apiresource "github.com/skiffhq/skiff/api/resource"
)

// Signal is a resource the manager observes.
type Signal string

// Signals, with the kubelet's names.
const (
	// SignalMemoryAvailable is the node's memory capacity less its
	// working set.
	SignalMemoryAvailable Signal = "memory.available"
	// SignalAllocatableMemoryAvailable is the pods' allocatable memory
	// less the working set of the pods' cgroup.
	SignalAllocatableMemoryAvailable Signal = "allocatableMemory.available"
	// SignalNodeFsAvailable and SignalNodeFsInodesFree are about the
	// filesystem of the agent's data dir.
	SignalNodeFsAvailable  Signal = "nodefs.available"
	SignalNodeFsInodesFree Signal = "nodefs.inodesFree"
	// SignalImageFsAvailable and SignalImageFsInodesFree are about the
	// filesystem of containerd's root (images, writable layers).
	SignalImageFsAvailable  Signal = "imagefs.available"
	SignalImageFsInodesFree Signal = "imagefs.inodesFree"
	// SignalPIDAvailable is the node's PID limit less the processes.
	SignalPIDAvailable Signal = "pid.available"
)

// signals lists every Signal in the order the manager evaluates them.
var signals = []Signal{
	SignalMemoryAvailable, SignalAllocatableMemoryAvailable,
	SignalNodeFsAvailable, SignalNodeFsInodesFree,
	SignalImageFsAvailable, SignalImageFsInodesFree, SignalPIDAvailable,
}

func knownSignal(s Signal) bool {
	for _, k := range signals {
		if k == s {
			return true
		}
	}
	return false
}

// Value is a threshold quantity: an absolute amount (bytes, inodes,
// PIDs) or a fraction of the signal's capacity.
type Value struct {
	Quantity   int64   // used when Percentage is 0
	Percentage float64 // fraction in (0, 1]
}

// Resolve returns v against capacity.
func (v Value) Resolve(capacity int64) int64 {
	if v.Percentage > 0 {
		return int64(math.Round(v.Percentage * float64(capacity)))
	}
	return v.Quantity
}

// String renders v as it is written in flags.
func (v Value) String() string {
	if v.Percentage > 0 {
		return strconv.FormatFloat(v.Percentage*100, 'f', -1, 64) + "%"
	}
	return apiresource.NewQuantity(v.Quantity, apiresource.BinarySI).String()
}

// Threshold is one eviction threshold: the signal is met when its
// available amount falls below Value.
type Threshold struct {
	Signal Signal
	Value  Value
	// GracePeriod is how long the threshold must be met before the
	// manager acts; 0 for hard thresholds.
	GracePeriod time.Duration
	// MinReclaim is how far beyond Value the manager keeps reclaiming
	// once the threshold was met (zero: none).
	MinReclaim Value
	// Hard thresholds evict at once with no grace for the pod.
	Hard bool
}

func (t Threshold) String() string {
	kind := "soft"
	if t.Hard {
		kind = "hard"
	}
	return fmt.Sprintf("%s %s<%s", kind, t.Signal, t.Value)
}

// Flag defaults, as SPEC.md and the kubelet have them.
const (
	DefaultEvictionHard             = "memory.available<100Mi,nodefs.available<10%,imagefs.available<15%,nodefs.inodesFree<5%"
	DefaultPressureTransitionPeriod = 30 * time.Second
	DefaultMonitorInterval          = time.Second
	DefaultMaxPods                  = 110
)

// Config is the manager's policy, parsed from the agent's flags.
type Config struct {
	Thresholds []Threshold
	// PressureTransitionPeriod is how long a pressure condition stays
	// true after its threshold was last met.
	PressureTransitionPeriod time.Duration
	// MaxPodGracePeriodSeconds caps a pod's grace on soft eviction; 0 or
	// less leaves the pod's own.
	MaxPodGracePeriodSeconds int64
	// MaxPods is the most pods admitted at once (0: no limit).
	MaxPods int
	// MonitorInterval is the period of the synchronize cycle.
	MonitorInterval time.Duration
}

// Validate checks c.
func (c Config) Validate() error {
	if c.PressureTransitionPeriod < 0 {
		return fmt.Errorf("eviction config: negative pressure transition period %s", c.PressureTransitionPeriod)
	}
	if c.MonitorInterval < 0 {
		return fmt.Errorf("eviction config: negative monitor interval %s", c.MonitorInterval)
	}
	for _, t := range c.Thresholds {
		if !knownSignal(t.Signal) {
			return fmt.Errorf("eviction config: unknown signal %q", t.Signal)
		}
		if t.Value.Quantity < 0 || t.Value.Percentage < 0 || t.Value.Percentage > 1 {
			return fmt.Errorf("eviction config: %s: value out of range", t)
		}
	}
	return nil
}

// ParseConfig reads the eviction flags of the agent (the names SPEC.md
// gives, without dashes: "eviction-hard", "eviction-soft",
// "eviction-soft-grace-period", "eviction-minimum-reclaim",
// "eviction-pressure-transition-period", "eviction-max-pod-grace-period",
// "max-pods"). A missing flag takes its default; an empty
// "eviction-hard" means no hard thresholds. Errors name the flag and the
// part at fault.
func ParseConfig(flags map[string]string) (Config, error) {
	get := func(name, def string) string {
		if v, ok := flags[name]; ok {
			return strings.TrimSpace(v)
		}
		return def
	}
	cfg := Config{PressureTransitionPeriod: DefaultPressureTransitionPeriod, MaxPods: DefaultMaxPods, MonitorInterval: DefaultMonitorInterval}
	hard, err := parseStatements("eviction-hard", get("eviction-hard", DefaultEvictionHard))
	if err != nil {
		return Config{}, err
	}
	soft, err := parseStatements("eviction-soft", get("eviction-soft", ""))
	if err != nil {
		return Config{}, err
	}
	graces, err := parseGracePeriods(get("eviction-soft-grace-period", ""))
	if err != nil {
		return Config{}, err
	}
	reclaims, err := parseMinReclaims(get("eviction-minimum-reclaim", ""))
	if err != nil {
		return Config{}, err
	}
	for i := range hard {
		hard[i].Hard = true
		hard[i].MinReclaim = reclaims[hard[i].Signal]
		cfg.Thresholds = append(cfg.Thresholds, hard[i])
	}
	for i := range soft {
		g, ok := graces[soft[i].Signal]
		if !ok {
			return Config{}, fmt.Errorf("eviction-soft: %s: no grace period in eviction-soft-grace-period", soft[i].Signal)
		}
		soft[i].GracePeriod = g
		soft[i].MinReclaim = reclaims[soft[i].Signal]
		cfg.Thresholds = append(cfg.Thresholds, soft[i])
		delete(graces, soft[i].Signal)
	}
	for _, s := range signals {
		if _, ok := graces[s]; ok {
			return Config{}, fmt.Errorf("eviction-soft-grace-period: %s: no soft threshold for this signal", s)
		}
	}
	if v := get("eviction-pressure-transition-period", ""); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return Config{}, fmt.Errorf("eviction-pressure-transition-period: %q is not a non-negative duration", v)
		}
		cfg.PressureTransitionPeriod = d
	}
	if v := get("eviction-max-pod-grace-period", ""); v != "" {
		secs, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			d, derr := time.ParseDuration(v)
			if derr != nil {
				return Config{}, fmt.Errorf("eviction-max-pod-grace-period: %q is neither seconds nor a duration", v)
			}
			secs = int64(d / time.Second)
		}
		cfg.MaxPodGracePeriodSeconds = secs
	}
	if v := get("max-pods", ""); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return Config{}, fmt.Errorf("max-pods: %q is not a non-negative integer", v)
		}
		cfg.MaxPods = n
	}
	return cfg, cfg.Validate()
}

// parseStatements parses "signal<value,…" from flag.
func parseStatements(flag, s string) ([]Threshold, error) {
	var out []Threshold
	seen := map[Signal]bool{}
	for _, part := range splitList(s) {
		sig, val, ok := strings.Cut(part, "<")
		if !ok {
			return nil, fmt.Errorf("%s: %q: want signal<value (only the operator < is supported)", flag, part)
		}
		signal := Signal(strings.TrimSpace(sig))
		if !knownSignal(signal) {
			return nil, fmt.Errorf("%s: %q: unknown signal %q", flag, part, signal)
		}
		if seen[signal] {
			return nil, fmt.Errorf("%s: %q: signal %s appears twice", flag, part, signal)
		}
		seen[signal] = true
		v, skip, err := parseValue(strings.TrimSpace(val))
		if err != nil {
			return nil, fmt.Errorf("%s: %q: %w", flag, part, err)
		}
		if skip {
			continue // 0% and 100% disable the signal, as in the kubelet
		}
		out = append(out, Threshold{Signal: signal, Value: v})
	}
	return out, nil
}

// parseValue parses a quantity ("100Mi", "1000") or a percentage
// ("10%"). skip is set for "0%" and "100%".
func parseValue(s string) (v Value, skip bool, err error) {
	if p, ok := strings.CutSuffix(s, "%"); ok {
		f, err := strconv.ParseFloat(p, 64)
		switch {
		case err != nil || math.IsNaN(f):
			return Value{}, false, fmt.Errorf("bad percentage %q", s)
		case f == 0 || f == 100:
			return Value{}, true, nil
		case f < 0 || f > 100:
			return Value{}, false, fmt.Errorf("percentage %q must be between 0%% and 100%%", s)
		}
		return Value{Percentage: f / 100}, false, nil
	}
	q, err := apiresource.Parse(s)
	if err != nil {
		return Value{}, false, fmt.Errorf("bad quantity %q: %w", s, err)
	}
	if q.Sign() <= 0 {
		return Value{}, false, fmt.Errorf("quantity %q must be positive", s)
	}
	return Value{Quantity: q.Value()}, false, nil
}

// parseGracePeriods parses "signal=duration,…".
func parseGracePeriods(s string) (map[Signal]time.Duration, error) {
	out := map[Signal]time.Duration{}
	for _, part := range splitList(s) {
		signal, val, err := splitAssign("eviction-soft-grace-period", part)
		if err != nil {
			return nil, err
		}
		d, err := time.ParseDuration(val)
		if err != nil || d < 0 {
			return nil, fmt.Errorf("eviction-soft-grace-period: %q: %q is not a non-negative duration", part, val)
		}
		out[signal] = d
	}
	return out, nil
}

// parseMinReclaims parses "signal=value,…"; a zero value is allowed.
func parseMinReclaims(s string) (map[Signal]Value, error) {
	out := map[Signal]Value{}
	for _, part := range splitList(s) {
		signal, val, err := splitAssign("eviction-minimum-reclaim", part)
		if err != nil {
			return nil, err
		}
		if q, err := apiresource.Parse(val); err == nil && q.IsZero() {
			out[signal] = Value{}
			continue
		}
		if val == "0%" {
			out[signal] = Value{}
			continue
		}
		v, _, err := parseValue(val)
		if err != nil {
			return nil, fmt.Errorf("eviction-minimum-reclaim: %q: %w", part, err)
		}
		out[signal] = v
	}
	return out, nil
}

func splitAssign(flag, part string) (Signal, string, error) {
	sig, val, ok := strings.Cut(part, "=")
	if !ok {
		return "", "", fmt.Errorf("%s: %q: want signal=value", flag, part)
	}
	signal := Signal(strings.TrimSpace(sig))
	if !knownSignal(signal) {
		return "", "", fmt.Errorf("%s: %q: unknown signal %q", flag, part, signal)
	}
	return signal, strings.TrimSpace(val), nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
