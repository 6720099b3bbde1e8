package api

import (
	"path"
	"slices"
)

// hostPathTypes are the values HostPathVolumeSource.Type may take.
func hostPathTypes() []string {
	return []string{"", "DirectoryOrCreate", "Directory", "FileOrCreate", "File", "Socket", "CharDevice", "BlockDevice"}
}

// validateVolumes checks the pod's volumes and returns the set of their
// names for volume mounts to refer to.
func validateVolumes(vols []Volume, p Path) (map[string]bool, FieldErrors) {
	var errs FieldErrors
	names := map[string]bool{}
	for i := range vols {
		v := &vols[i]
		ip := p.Index(i)
		np := ip.Child("name")
		switch {
		case v.Name == "":
			errs = append(errs, Required(np, ""))
		case names[v.Name]:
			errs = append(errs, Duplicate(np, v.Name))
		default:
			errs = append(errs, validateDNSLabel(v.Name, np)...)
		}
		if v.Name != "" {
			names[v.Name] = true
		}
		errs = append(errs, validateVolumeSource(&v.VolumeSource, ip)...)
	}
	return names, errs
}

// validateVolumeSource requires exactly one source and checks it.
func validateVolumeSource(s *VolumeSource, p Path) FieldErrors {
	var errs FieldErrors
	n := 0
	one := func(set bool, name string, check func(Path) FieldErrors) {
		if !set {
			return
		}
		if n > 0 {
			errs = append(errs, Forbidden(p.Child(name), moreThanOneVolumeMsg))
			return
		}
		n++
		errs = append(errs, check(p.Child(name))...)
	}
	one(s.HostPath != nil, "hostPath", func(fp Path) FieldErrors { return validateHostPathSource(s.HostPath, fp) })
	one(s.EmptyDir != nil, "emptyDir", func(fp Path) FieldErrors { return validateEmptyDirSource(s.EmptyDir, fp) })
	one(s.Secret != nil, "secret", func(fp Path) FieldErrors {
		return validateProjection(s.Secret.SecretName, "secretName", s.Secret.Items, s.Secret.DefaultMode, fp)
	})
	one(s.ConfigMap != nil, "configMap", func(fp Path) FieldErrors {
		return validateProjection(s.ConfigMap.Name, "name", s.ConfigMap.Items, s.ConfigMap.DefaultMode, fp)
	})
	one(s.PersistentVolumeClaim != nil, "persistentVolumeClaim", func(fp Path) FieldErrors {
		if s.PersistentVolumeClaim.ClaimName == "" {
			return FieldErrors{Required(fp.Child("claimName"), "")}
		}
		return nil
	})
	if n == 0 {
		errs = append(errs, Required(p, "must specify a volume type"))
	}
	return errs
}

func validateHostPathSource(h *HostPathVolumeSource, p Path) FieldErrors {
	var errs FieldErrors
	if h.Path == "" {
		errs = append(errs, Required(p.Child("path"), ""))
	} else {
		if !path.IsAbs(h.Path) {
			errs = append(errs, Invalid(p.Child("path"), h.Path, mustBeAbsolutePathMsg))
		}
		errs = append(errs, validatePathNoBacksteps(h.Path, p.Child("path"))...)
	}
	if h.Type != nil {
		allowed := hostPathTypes()
		if !slices.Contains(allowed, *h.Type) {
			errs = append(errs, NotSupported(p.Child("type"), *h.Type, allowed))
		}
	}
	return errs
}

func validateEmptyDirSource(e *EmptyDirVolumeSource, p Path) FieldErrors {
	var errs FieldErrors
	if e.Medium != "" && e.Medium != "Memory" {
		errs = append(errs, NotSupported(p.Child("medium"), e.Medium, []string{"", "Memory"}))
	}
	if e.SizeLimit != nil && e.SizeLimit.Sign() < 0 {
		errs = append(errs, Invalid(p.Child("sizeLimit"), e.SizeLimit.String(), isNegativeErrorMsg))
	}
	return errs
}

// validateProjection checks a secret or configMap volume: the object name
// (in field nameField), the items and the file modes.
func validateProjection(name, nameField string, items []KeyToPath, mode *int32, p Path) FieldErrors {
	var errs FieldErrors
	if name == "" {
		errs = append(errs, Required(p.Child(nameField), ""))
	} else {
		errs = append(errs, validateDNSSubdomain(name, p.Child(nameField))...)
	}
	errs = append(errs, validateFileMode(mode, p.Child("defaultMode"))...)
	for i, it := range items {
		ip := p.Child("items").Index(i)
		if it.Key == "" {
			errs = append(errs, Required(ip.Child("key"), ""))
		}
		if it.Path == "" {
			errs = append(errs, Required(ip.Child("path"), ""))
		} else {
			errs = append(errs, validateLocalDescendingPath(it.Path, ip.Child("path"))...)
		}
		errs = append(errs, validateFileMode(it.Mode, ip.Child("mode"))...)
	}
	return errs
}

func validateFileMode(mode *int32, p Path) FieldErrors {
	if mode != nil && (*mode < 0 || *mode > 0o777) {
		return FieldErrors{Invalid(p, *mode, fileModeErrorMsg)}
	}
	return nil
}

// validateVolumeMounts checks a container's mounts: each names a pod
// volume and has a unique absolute mountPath.
func validateVolumeMounts(mounts []VolumeMount, vols map[string]bool, p Path) FieldErrors {
	var errs FieldErrors
	paths := map[string]bool{}
	for i, m := range mounts {
		ip := p.Index(i)
		if m.Name == "" {
			errs = append(errs, Required(ip.Child("name"), ""))
		} else if !vols[m.Name] {
			errs = append(errs, Invalid(ip.Child("name"), m.Name, "must match the name of a volume of the pod"))
		}
		mp := ip.Child("mountPath")
		switch {
		case m.MountPath == "":
			errs = append(errs, Required(mp, ""))
		case paths[m.MountPath]:
			errs = append(errs, Invalid(mp, m.MountPath, "must be unique"))
		case !path.IsAbs(m.MountPath):
			errs = append(errs, Invalid(mp, m.MountPath, mustBeAbsolutePathMsg))
		}
		paths[m.MountPath] = true
		if m.SubPath != "" {
			errs = append(errs, validateLocalDescendingPath(m.SubPath, ip.Child("subPath"))...)
		}
	}
	return errs
}

// validateProbes checks a container's probes; init containers may have
// none.
func validateProbes(c *Container, init bool, p Path) FieldErrors {
	var errs FieldErrors
	probes := []struct {
		probe *Probe
		name  string
	}{{c.LivenessProbe, "livenessProbe"}, {c.ReadinessProbe, "readinessProbe"}, {c.StartupProbe, "startupProbe"}}
	for _, pr := range probes {
		if pr.probe == nil {
			continue
		}
		fp := p.Child(pr.name)
		if init {
			errs = append(errs, Forbidden(fp, "may not be set for init containers"))
			continue
		}
		errs = append(errs, validateProbe(pr.probe, pr.name == "readinessProbe", fp)...)
	}
	return errs
}

func validateProbe(pr *Probe, readiness bool, p Path) FieldErrors {
	errs := validateHandler(&pr.ProbeHandler, p)
	for _, f := range []struct {
		v    int32
		name string
	}{
		{pr.InitialDelaySeconds, "initialDelaySeconds"},
		{pr.TimeoutSeconds, "timeoutSeconds"},
		{pr.PeriodSeconds, "periodSeconds"},
		{pr.SuccessThreshold, "successThreshold"},
		{pr.FailureThreshold, "failureThreshold"},
	} {
		errs = append(errs, validateNonnegative(int64(f.v), p.Child(f.name))...)
	}
	if !readiness && pr.SuccessThreshold != 1 {
		errs = append(errs, Invalid(p.Child("successThreshold"), pr.SuccessThreshold, "must be 1"))
	}
	if g := pr.TerminationGracePeriodSeconds; g != nil {
		switch {
		case readiness:
			errs = append(errs, Invalid(p.Child("terminationGracePeriodSeconds"), *g, "must not be set for readinessProbes"))
		case *g <= 0:
			errs = append(errs, Invalid(p.Child("terminationGracePeriodSeconds"), *g, "must be greater than 0"))
		}
	}
	return errs
}

// validateHandler requires exactly one probe action and checks it.
func validateHandler(h *ProbeHandler, p Path) FieldErrors {
	var errs FieldErrors
	n := 0
	if h.Exec != nil {
		n++
		if len(h.Exec.Command) == 0 {
			errs = append(errs, Required(p.Child("exec").Child("command"), ""))
		}
	}
	if h.HTTPGet != nil {
		if n > 0 {
			errs = append(errs, Forbidden(p.Child("httpGet"), moreThanOneHandlerMsg))
		} else {
			n++
			errs = append(errs, validateHTTPGet(h.HTTPGet, p.Child("httpGet"))...)
		}
	}
	if h.TCPSocket != nil {
		if n > 0 {
			errs = append(errs, Forbidden(p.Child("tcpSocket"), moreThanOneHandlerMsg))
		} else {
			n++
			errs = append(errs, validatePortNumOrName(h.TCPSocket.Port, p.Child("tcpSocket").Child("port"))...)
		}
	}
	if n == 0 {
		errs = append(errs, Required(p, "must specify a handler type"))
	}
	return errs
}

func validateHTTPGet(h *HTTPGetAction, p Path) FieldErrors {
	var errs FieldErrors
	if h.Path == "" {
		errs = append(errs, Required(p.Child("path"), ""))
	}
	errs = append(errs, validatePortNumOrName(h.Port, p.Child("port"))...)
	if h.Scheme != URISchemeHTTP && h.Scheme != URISchemeHTTPS {
		errs = append(errs, NotSupported(p.Child("scheme"), h.Scheme, []string{URISchemeHTTP, URISchemeHTTPS}))
	}
	for i, hdr := range h.HTTPHeaders {
		for _, msg := range isHTTPHeaderName(hdr.Name) {
			errs = append(errs, Invalid(p.Child("httpHeaders").Index(i).Child("name"), hdr.Name, msg))
		}
	}
	return errs
}

// validatePortNumOrName checks a probe port: a number in 1–65535 or an
// IANA service name.
func validatePortNumOrName(port IntOrString, p Path) FieldErrors {
	var errs FieldErrors
	switch port.Type {
	case Int:
		for _, msg := range isValidPortNum(int(port.IntVal)) {
			errs = append(errs, Invalid(p, port.IntVal, msg))
		}
	case String:
		for _, msg := range isValidPortName(port.StrVal) {
			errs = append(errs, Invalid(p, port.StrVal, msg))
		}
	default:
		errs = append(errs, Invalid(p, nil, "must be an integer or a string"))
	}
	return errs
}
