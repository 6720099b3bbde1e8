package api

import (
	"strconv"
	"strings"

	"github.com/skiffhq/skiff/api/labels"
)

func validateDeployment(d *Deployment) FieldErrors {
	errs := validateObjectMeta(&d.ObjectMeta, true, labels.IsDNS1123Subdomain, NewPath("metadata"))
	p := NewPath("spec")
	s := &d.Spec
	if s.Replicas != nil {
		errs = append(errs, validateNonnegative(int64(*s.Replicas), p.Child("replicas"))...)
	}
	errs = append(errs, validateWorkloadTemplate(s.Selector, &s.Template, "deployment", p)...)
	errs = append(errs, validateDeploymentStrategy(&s.Strategy, p.Child("strategy"))...)
	errs = append(errs, validateNonnegative(int64(s.MinReadySeconds), p.Child("minReadySeconds"))...)
	if s.RevisionHistoryLimit != nil {
		errs = append(errs, validateNonnegative(int64(*s.RevisionHistoryLimit), p.Child("revisionHistoryLimit"))...)
	}
	if pd := s.ProgressDeadlineSeconds; pd != nil {
		errs = append(errs, validateNonnegative(int64(*pd), p.Child("progressDeadlineSeconds"))...)
		if *pd <= s.MinReadySeconds {
			errs = append(errs, Invalid(p.Child("progressDeadlineSeconds"), *pd, "must be greater than minReadySeconds"))
		}
	}
	return errs
}

func validateDaemonSet(ds *DaemonSet) FieldErrors {
	errs := validateObjectMeta(&ds.ObjectMeta, true, labels.IsDNS1123Subdomain, NewPath("metadata"))
	p := NewPath("spec")
	s := &ds.Spec
	errs = append(errs, validateWorkloadTemplate(s.Selector, &s.Template, "daemonset", p)...)
	errs = append(errs, validateNonnegative(int64(s.MinReadySeconds), p.Child("minReadySeconds"))...)
	if s.RevisionHistoryLimit != nil {
		errs = append(errs, validateNonnegative(int64(*s.RevisionHistoryLimit), p.Child("revisionHistoryLimit"))...)
	}
	errs = append(errs, validateDaemonSetUpdateStrategy(&s.UpdateStrategy, p.Child("updateStrategy"))...)
	return errs
}

// validateWorkloadTemplate checks what Deployments and DaemonSets share: a
// required, non-empty, valid selector that matches the template's labels,
// and a template whose pods restart Always and have no deadline.
func validateWorkloadTemplate(sel *LabelSelector, t *PodTemplateSpec, kind string, p Path) FieldErrors {
	var errs FieldErrors
	sp := p.Child("selector")
	tp := p.Child("template")
	switch {
	case sel == nil:
		errs = append(errs, Required(sp, ""))
	case len(sel.MatchLabels)+len(sel.MatchExpressions) == 0:
		errs = append(errs, Invalid(sp, "", "empty selector is invalid for "+kind))
	default:
		selErrs := validateLabelSelector(sel, sp)
		errs = append(errs, selErrs...)
		if len(selErrs) == 0 {
			s, err := sel.AsSelector()
			if err != nil {
				errs = append(errs, Invalid(sp, formatSelector(sel), "invalid label selector"))
			} else if !s.Matches(labels.Set(t.Labels)) {
				errs = append(errs, Invalid(tp.Child("metadata").Child("labels"), labels.Set(t.Labels).String(),
					"`selector` does not match template `labels`"))
			}
		}
	}
	errs = append(errs, validatePodTemplate(t, tp)...)
	rp := tp.Child("spec").Child("restartPolicy")
	if t.Spec.RestartPolicy != RestartPolicyAlways && t.Spec.RestartPolicy != "" {
		// An empty policy is already reported as Required.
		errs = append(errs, NotSupported(rp, string(t.Spec.RestartPolicy), []string{string(RestartPolicyAlways)}))
	}
	if v := t.Spec.ActiveDeadlineSeconds; v != nil {
		errs = append(errs, Invalid(tp.Child("spec").Child("activeDeadlineSeconds"), *v, "activeDeadlineSeconds in "+kind+" is not Supported"))
	}
	return errs
}

// formatSelector renders a selector for error messages as
// "k=v,k2 in (a,b)".
func formatSelector(sel *LabelSelector) string {
	if sel == nil {
		return "<none>"
	}
	var parts []string
	for _, k := range sortedKeys(sel.MatchLabels) {
		parts = append(parts, k+"="+sel.MatchLabels[k])
	}
	for _, e := range sel.MatchExpressions {
		switch e.Operator {
		case LabelSelectorOpExists:
			parts = append(parts, e.Key)
		case LabelSelectorOpDoesNotExist:
			parts = append(parts, "!"+e.Key)
		default:
			parts = append(parts, e.Key+" "+strings.ToLower(e.Operator)+" ("+strings.Join(e.Values, ",")+")")
		}
	}
	return strings.Join(parts, ",")
}

func validateDeploymentStrategy(st *DeploymentStrategy, p Path) FieldErrors {
	var errs FieldErrors
	switch st.Type {
	case RecreateDeploymentStrategyType:
		if st.RollingUpdate != nil {
			errs = append(errs, Forbidden(p.Child("rollingUpdate"), "may not be specified when strategy `type` is 'Recreate'"))
		}
	case RollingUpdateDeploymentStrategyType:
		ru := st.RollingUpdate
		if ru == nil {
			errs = append(errs, Required(p.Child("rollingUpdate"), "this should be defaulted and never be nil"))
			break
		}
		rp := p.Child("rollingUpdate")
		errs = append(errs, validateIntOrPercent(ru.MaxUnavailable, rp.Child("maxUnavailable"))...)
		errs = append(errs, validateIntOrPercent(ru.MaxSurge, rp.Child("maxSurge"))...)
		if intOrPercentValue(ru.MaxUnavailable) == 0 && intOrPercentValue(ru.MaxSurge) == 0 {
			errs = append(errs, Invalid(rp.Child("maxUnavailable"), intOrStringText(ru.MaxUnavailable), "may not be 0 when `maxSurge` is 0"))
		}
		errs = append(errs, validateNotMoreThan100Percent(ru.MaxUnavailable, rp.Child("maxUnavailable"))...)
	case "":
		errs = append(errs, Required(p.Child("type"), ""))
	default:
		errs = append(errs, NotSupported(p.Child("type"), st.Type,
			[]string{RecreateDeploymentStrategyType, RollingUpdateDeploymentStrategyType}))
	}
	return errs
}

func validateDaemonSetUpdateStrategy(st *DaemonSetUpdateStrategy, p Path) FieldErrors {
	var errs FieldErrors
	switch st.Type {
	case OnDeleteDaemonSetStrategyType:
		if st.RollingUpdate != nil {
			errs = append(errs, Forbidden(p.Child("rollingUpdate"), "may not be specified when strategy `type` is 'OnDelete'"))
		}
	case RollingUpdateDaemonSetStrategyType:
		ru := st.RollingUpdate
		if ru == nil {
			errs = append(errs, Required(p.Child("rollingUpdate"), ""))
			break
		}
		rp := p.Child("rollingUpdate")
		errs = append(errs, validateIntOrPercent(ru.MaxUnavailable, rp.Child("maxUnavailable"))...)
		errs = append(errs, validateIntOrPercent(ru.MaxSurge, rp.Child("maxSurge"))...)
		errs = append(errs, validateNotMoreThan100Percent(ru.MaxUnavailable, rp.Child("maxUnavailable"))...)
		errs = append(errs, validateNotMoreThan100Percent(ru.MaxSurge, rp.Child("maxSurge"))...)
		unavailable := intOrPercentValue(ru.MaxUnavailable) != 0
		surge := intOrPercentValue(ru.MaxSurge) != 0
		switch {
		case unavailable && surge:
			errs = append(errs, Invalid(rp.Child("maxSurge"), intOrStringText(ru.MaxSurge), "may not be set when maxUnavailable is non-zero"))
		case !unavailable && !surge:
			errs = append(errs, Required(rp.Child("maxUnavailable"), "cannot be 0 when maxSurge is 0"))
		}
	case "":
		errs = append(errs, Required(p.Child("type"), ""))
	default:
		errs = append(errs, NotSupported(p.Child("type"), st.Type,
			[]string{RollingUpdateDaemonSetStrategyType, OnDeleteDaemonSetStrategyType}))
	}
	return errs
}

// validateIntOrPercent accepts a non-negative integer or "N%"; nil is
// left to the zero checks of the callers.
func validateIntOrPercent(v *IntOrString, p Path) FieldErrors {
	if v == nil {
		return nil
	}
	switch v.Type {
	case Int:
		return validateNonnegative(int64(v.IntVal), p)
	case String:
		var errs FieldErrors
		for _, msg := range isValidPercent(v.StrVal) {
			errs = append(errs, Invalid(p, v.StrVal, msg))
		}
		return errs
	default:
		return FieldErrors{Invalid(p, nil, "must be an integer or a percentage")}
	}
}

func validateNotMoreThan100Percent(v *IntOrString, p Path) FieldErrors {
	if n, ok := percentValue(v); ok && n > 100 {
		return FieldErrors{Invalid(p, v.StrVal, "must not be greater than 100%")}
	}
	return nil
}

// percentValue returns N of a valid "N%".
func percentValue(v *IntOrString) (int, bool) {
	if v == nil || v.Type != String || len(isValidPercent(v.StrVal)) != 0 {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimSuffix(v.StrVal, "%"))
	if err != nil {
		// Too many digits for an int: certainly more than 100.
		return int(^uint(0) >> 1), true
	}
	return n, true
}

// intOrPercentValue returns the number in v (an integer or "N%"), 0 for
// nil and -1 for a value that is neither.
func intOrPercentValue(v *IntOrString) int {
	if v == nil {
		return 0
	}
	if v.Type == Int {
		return int(v.IntVal)
	}
	if n, ok := percentValue(v); ok {
		return n
	}
	return -1
}

func intOrStringText(v *IntOrString) string {
	if v == nil {
		return ""
	}
	return v.String()
}
