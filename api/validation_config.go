package api

import (
	"encoding/json"
	"net/netip"

	"github.com/skiffhq/skiff/api/labels"
)

func validateNamespace(ns *Namespace) FieldErrors {
	errs := validateObjectMeta(&ns.ObjectMeta, false, labels.IsDNS1123Label, NewPath("metadata"))
	for i, f := range ns.Spec.Finalizers {
		errs = append(errs, validateFinalizerName(f, NewPath("spec", "finalizers").Index(i))...)
	}
	if ph := ns.Status.Phase; ph != "" && ph != NamespaceActive && ph != NamespaceTerminating {
		errs = append(errs, NotSupported(NewPath("status", "phase"), ph, []string{NamespaceActive, NamespaceTerminating}))
	}
	return errs
}

func validateNode(n *Node) FieldErrors {
	errs := validateObjectMeta(&n.ObjectMeta, false, labels.IsDNS1123Subdomain, NewPath("metadata"))
	p := NewPath("spec")
	type taintKey struct{ key, effect string }
	seen := map[taintKey]bool{}
	for i, t := range n.Spec.Taints {
		ip := p.Child("taints").Index(i)
		errs = append(errs, validateQualifiedName(t.Key, ip.Child("key"))...)
		errs = append(errs, validateLabelValue(t.Value, ip.Child("value"))...)
		errs = append(errs, validateTaintEffect(t.Effect, false, ip.Child("effect"))...)
		k := taintKey{t.Key, t.Effect}
		if seen[k] {
			d := Duplicate(ip, t.Key+":"+t.Effect)
			d.Detail = "taints must be unique by key and effect pair"
			errs = append(errs, d)
		}
		seen[k] = true
	}
	if n.Spec.PodCIDR != "" {
		errs = append(errs, validateCIDR(n.Spec.PodCIDR, p.Child("podCIDR"))...)
	}
	errs = append(errs, validatePodCIDRs(n.Spec.PodCIDR, n.Spec.PodCIDRs, p.Child("podCIDRs"))...)
	return errs
}

// validatePodCIDRs allows at most one CIDR per IP family, the first equal
// to podCIDR when both are set.
func validatePodCIDRs(podCIDR string, cidrs []string, p Path) FieldErrors {
	var errs FieldErrors
	families := map[bool]int{}
	valid := true
	for i, c := range cidrs {
		e := validateCIDR(c, p.Index(i))
		if len(e) > 0 {
			valid = false
			errs = append(errs, e...)
			continue
		}
		pfx, _ := netip.ParsePrefix(c)
		families[pfx.Addr().Is4()]++
	}
	if valid && (len(cidrs) > 2 || families[true] > 1 || families[false] > 1) {
		errs = append(errs, Invalid(p, "", "may specify no more than one CIDR for each IP family"))
	}
	if podCIDR != "" && len(cidrs) > 0 && cidrs[0] != podCIDR {
		errs = append(errs, Invalid(p.Index(0), cidrs[0], "must match `podCIDR`"))
	}
	return errs
}

func validateSecret(s *Secret) FieldErrors {
	errs := validateObjectMeta(&s.ObjectMeta, true, labels.IsDNS1123Subdomain, NewPath("metadata"))
	dp := NewPath("data")
	size := 0
	for _, k := range sortedKeys(s.Data) {
		for _, msg := range isConfigMapKey(k) {
			errs = append(errs, Invalid(dp.Key(k), k, msg))
		}
		size += len(s.Data[k])
	}
	// stringData is merged into data by SetDefaults; check what is left.
	for _, k := range sortedKeys(s.StringData) {
		for _, msg := range isConfigMapKey(k) {
			errs = append(errs, Invalid(NewPath("stringData").Key(k), k, msg))
		}
		if _, dup := s.Data[k]; !dup {
			size += len(s.StringData[k])
		}
	}
	if size > maxConfigSize {
		errs = append(errs, TooLong(dp, maxConfigSize))
	}
	tp := NewPath("type")
	switch s.Type {
	case "":
		errs = append(errs, Required(tp, ""))
	case SecretTypeDockercfg:
		errs = append(errs, requireSecretJSON(s, ".dockercfg")...)
	case SecretTypeDockerConfigJSON:
		errs = append(errs, requireSecretJSON(s, ".dockerconfigjson")...)
	case SecretTypeBasicAuth:
		_, user := s.Data["username"]
		_, pass := s.Data["password"]
		if !user && !pass {
			errs = append(errs, Required(dp.Key("username"), ""), Required(dp.Key("password"), ""))
		}
	case SecretTypeSSHAuth:
		if len(s.Data["ssh-privatekey"]) == 0 {
			errs = append(errs, Required(dp.Key("ssh-privatekey"), ""))
		}
	case SecretTypeTLS:
		for _, k := range []string{"tls.crt", "tls.key"} {
			if _, ok := s.Data[k]; !ok {
				errs = append(errs, Required(dp.Key(k), ""))
			}
		}
	}
	return errs
}

// requireSecretJSON requires data[key] to exist and hold a JSON object.
func requireSecretJSON(s *Secret, key string) FieldErrors {
	p := NewPath("data").Key(key)
	v, ok := s.Data[key]
	if !ok {
		return FieldErrors{Required(p, "")}
	}
	if err := json.Unmarshal(v, &map[string]any{}); err != nil {
		return FieldErrors{Invalid(p, "<secret contents redacted>", err.Error())}
	}
	return nil
}

func validateConfigMap(c *ConfigMap) FieldErrors {
	errs := validateObjectMeta(&c.ObjectMeta, true, labels.IsDNS1123Subdomain, NewPath("metadata"))
	size := 0
	for _, k := range sortedKeys(c.Data) {
		kp := NewPath("data").Key(k)
		for _, msg := range isConfigMapKey(k) {
			errs = append(errs, Invalid(kp, k, msg))
		}
		if _, dup := c.BinaryData[k]; dup {
			errs = append(errs, Invalid(kp, k, "duplicate of key present in binaryData"))
		}
		size += len(c.Data[k])
	}
	for _, k := range sortedKeys(c.BinaryData) {
		kp := NewPath("binaryData").Key(k)
		for _, msg := range isConfigMapKey(k) {
			errs = append(errs, Invalid(kp, k, msg))
		}
		if _, dup := c.Data[k]; dup {
			errs = append(errs, Invalid(kp, k, "duplicate of key present in data"))
		}
		size += len(c.BinaryData[k])
	}
	if size > maxConfigSize {
		errs = append(errs, TooLong(NewPath("data"), maxConfigSize))
	}
	return errs
}

func validateEvent(e *Event) FieldErrors {
	errs := validateObjectMeta(&e.ObjectMeta, true, labels.IsDNS1123Subdomain, NewPath("metadata"))
	ip := NewPath("involvedObject")
	if e.InvolvedObject.Kind == "" {
		errs = append(errs, Required(ip.Child("kind"), ""))
	}
	if e.InvolvedObject.Name == "" {
		errs = append(errs, Required(ip.Child("name"), ""))
	}
	// An event lives in its object's namespace; events about
	// cluster-scoped objects live in "default".
	if ns := e.InvolvedObject.Namespace; ns != "" && ns != e.Namespace {
		errs = append(errs, Invalid(ip.Child("namespace"), ns, "does not match event.namespace"))
	}
	if e.Type != "" && e.Type != EventTypeNormal && e.Type != EventTypeWarning {
		errs = append(errs, NotSupported(NewPath("type"), e.Type, []string{EventTypeNormal, EventTypeWarning}))
	}
	if len(e.Reason) > maxEventReasonLength {
		errs = append(errs, TooLong(NewPath("reason"), maxEventReasonLength))
	}
	if e.Count < 0 {
		errs = append(errs, Invalid(NewPath("count"), e.Count, isNegativeErrorMsg))
	}
	return errs
}
