package api

import (
	"slices"
	"strconv"
	"strings"

	"github.com/skiffhq/skiff/api/labels"
)

func taintEffects() []string {
	return []string{TaintEffectNoSchedule, TaintEffectPreferNoSchedule, TaintEffectNoExecute}
}

// validateTaintEffect checks a taint or toleration effect; only a
// toleration's may be empty (it then matches every effect).
func validateTaintEffect(effect string, allowEmpty bool, p Path) FieldErrors {
	if effect == "" {
		if allowEmpty {
			return nil
		}
		return FieldErrors{Required(p, "")}
	}
	if allowed := taintEffects(); !slices.Contains(allowed, effect) {
		return FieldErrors{NotSupported(p, effect, allowed)}
	}
	return nil
}

func validateTolerations(ts []Toleration, p Path) FieldErrors {
	var errs FieldErrors
	for i, t := range ts {
		ip := p.Index(i)
		if t.Key != "" {
			errs = append(errs, validateQualifiedName(t.Key, ip.Child("key"))...)
		}
		if t.Key == "" && t.Operator != TolerationOpExists {
			errs = append(errs, Invalid(ip.Child("operator"), t.Operator,
				"operator must be Exists when `key` is empty, which means \"match all values and all keys\""))
		}
		if t.TolerationSeconds != nil && t.Effect != TaintEffectNoExecute {
			errs = append(errs, Invalid(ip.Child("effect"), t.Effect,
				"effect must be 'NoExecute' when `tolerationSeconds` is set"))
		}
		switch t.Operator {
		case TolerationOpEqual, "":
			if msgs := labels.IsValidLabelValue(t.Value); len(msgs) != 0 {
				errs = append(errs, Invalid(ip.Child("value"), t.Value, strings.Join(msgs, "; ")))
			}
		case TolerationOpExists:
			if t.Value != "" {
				errs = append(errs, Invalid(ip.Child("value"), t.Value, "value must be empty when `operator` is 'Exists'"))
			}
		default:
			errs = append(errs, NotSupported(ip.Child("operator"), t.Operator, []string{TolerationOpEqual, TolerationOpExists}))
		}
		errs = append(errs, validateTaintEffect(t.Effect, true, ip.Child("effect"))...)
	}
	return errs
}

func validateAffinity(a *Affinity, p Path) FieldErrors {
	na := a.NodeAffinity
	if na == nil {
		return nil
	}
	p = p.Child("nodeAffinity")
	var errs FieldErrors
	if req := na.RequiredDuringSchedulingIgnoredDuringExecution; req != nil {
		rp := p.Child("requiredDuringSchedulingIgnoredDuringExecution")
		if len(req.NodeSelectorTerms) == 0 {
			errs = append(errs, Required(rp.Child("nodeSelectorTerms"), "must have at least one node selector term"))
		}
		for i := range req.NodeSelectorTerms {
			errs = append(errs, validateNodeSelectorTerm(&req.NodeSelectorTerms[i], rp.Child("nodeSelectorTerms").Index(i))...)
		}
	}
	for i := range na.PreferredDuringSchedulingIgnoredDuringExecution {
		t := &na.PreferredDuringSchedulingIgnoredDuringExecution[i]
		ip := p.Child("preferredDuringSchedulingIgnoredDuringExecution").Index(i)
		if t.Weight < 1 || t.Weight > 100 {
			errs = append(errs, Invalid(ip.Child("weight"), t.Weight, "must be in the range 1-100"))
		}
		errs = append(errs, validateNodeSelectorTerm(&t.Preference, ip.Child("preference"))...)
	}
	return errs
}

func validateNodeSelectorTerm(t *NodeSelectorTerm, p Path) FieldErrors {
	var errs FieldErrors
	for i, r := range t.MatchExpressions {
		errs = append(errs, validateNodeSelectorRequirement(r, p.Child("matchExpressions").Index(i))...)
	}
	for i, r := range t.MatchFields {
		errs = append(errs, validateNodeFieldSelectorRequirement(r, p.Child("matchFields").Index(i))...)
	}
	return errs
}

// validateNodeSelectorRequirement checks a requirement on node labels.
func validateNodeSelectorRequirement(r NodeSelectorRequirement, p Path) FieldErrors {
	var errs FieldErrors
	vp := p.Child("values")
	switch r.Operator {
	case NodeSelectorOpIn, NodeSelectorOpNotIn:
		if len(r.Values) == 0 {
			errs = append(errs, Required(vp, "must be specified when `operator` is 'In' or 'NotIn'"))
		}
	case NodeSelectorOpExists, NodeSelectorOpDoesNotExist:
		if len(r.Values) > 0 {
			errs = append(errs, Forbidden(vp, "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
		}
	case NodeSelectorOpGt, NodeSelectorOpLt:
		if len(r.Values) != 1 {
			errs = append(errs, Required(vp, "must be specified single value when `operator` is 'Lt' or 'Gt'"))
		} else if _, err := strconv.ParseInt(r.Values[0], 10, 64); err != nil {
			errs = append(errs, Invalid(vp.Index(0), r.Values[0], "must be an integer when `operator` is 'Lt' or 'Gt'"))
		}
	default:
		errs = append(errs, Invalid(p.Child("operator"), r.Operator, notValidSelectorOpMsg))
	}
	errs = append(errs, validateQualifiedName(r.Key, p.Child("key"))...)
	if r.Operator != NodeSelectorOpGt && r.Operator != NodeSelectorOpLt {
		for i, v := range r.Values {
			errs = append(errs, validateLabelValue(v, vp.Index(i))...)
		}
	}
	return errs
}

// validateNodeFieldSelectorRequirement checks a requirement on node
// fields; only metadata.name with In or NotIn and one value is supported.
func validateNodeFieldSelectorRequirement(r NodeSelectorRequirement, p Path) FieldErrors {
	var errs FieldErrors
	switch r.Operator {
	case NodeSelectorOpIn, NodeSelectorOpNotIn:
		if len(r.Values) != 1 {
			errs = append(errs, Required(p.Child("values"),
				"must be only one value when `operator` is 'In' or 'NotIn' for node field selector"))
		}
	default:
		errs = append(errs, Invalid(p.Child("operator"), r.Operator, notValidSelectorOpMsg))
	}
	if r.Key != "metadata.name" {
		errs = append(errs, Invalid(p.Child("key"), r.Key, "not a valid field selector key"))
		return errs
	}
	for i, v := range r.Values {
		errs = append(errs, validateDNSSubdomain(v, p.Child("values").Index(i))...)
	}
	return errs
}

// validateTopologySpread checks topology spread constraints: a positive
// maxSkew, a label key, a known whenUnsatisfiable, a valid selector, and
// no two constraints on the same key and whenUnsatisfiable.
func validateTopologySpread(cs []TopologySpreadConstraint, p Path) FieldErrors {
	var errs FieldErrors
	seen := map[[2]string]bool{}
	for i, c := range cs {
		ip := p.Index(i)
		if c.MaxSkew <= 0 {
			errs = append(errs, Invalid(ip.Child("maxSkew"), strconv.Itoa(int(c.MaxSkew)), "must be greater than zero"))
		}
		if c.TopologyKey == "" {
			errs = append(errs, Required(ip.Child("topologyKey"), "can not be empty"))
		} else {
			errs = append(errs, validateQualifiedName(c.TopologyKey, ip.Child("topologyKey"))...)
		}
		if allowed := []string{DoNotSchedule, ScheduleAnyway}; !slices.Contains(allowed, c.WhenUnsatisfiable) {
			errs = append(errs, NotSupported(ip.Child("whenUnsatisfiable"), c.WhenUnsatisfiable, allowed))
		}
		if c.LabelSelector != nil {
			errs = append(errs, validateLabelSelector(c.LabelSelector, ip.Child("labelSelector"))...)
		}
		k := [2]string{c.TopologyKey, c.WhenUnsatisfiable}
		if seen[k] {
			errs = append(errs, Duplicate(ip, "{"+c.TopologyKey+", "+c.WhenUnsatisfiable+"}"))
		}
		seen[k] = true
	}
	return errs
}
