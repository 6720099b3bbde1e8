package api

import (
	"reflect"
	"strings"
)

// Caps on list lengths in a pod spec (and every pod template). Defaulting
// adds fields to each item, so an uncapped list lets a request within the
// body limit grow past it once stored (50,000 empty containers became
// 6.9 MB). The caps are far above what a real pod uses.
const (
	MaxContainers       = 100
	MaxInitContainers   = 100
	MaxVolumes          = 256
	MaxImagePullSecrets = 64
	MaxTolerations      = 256
	// MaxTopologySpreadConstraints bounds the constraints of one pod.
	MaxTopologySpreadConstraints = 16
	// Per container.
	MaxPorts        = 256
	MaxEnv          = 1024
	MaxEnvFrom      = 64
	MaxVolumeMounts = 256
)

// MaxObjectBytes is the largest JSON encoding of a stored object. It is
// the request body limit less room for the server-set fields
// (resourceVersion, uid, timestamps), so that every object a GET returns
// is accepted back by a PUT.
const MaxObjectBytes = 3<<20 - 4<<10

// ValidateListLengths checks the list caps of obj alone, without looking
// at the items. It is cheap, and the API server runs it before defaulting
// so an oversized request costs little; Validate runs it too. It finds
// the pod spec of a Pod at spec, and of any other kind at
// spec.template.spec or spec.jobTemplate.spec.template.spec, so workload
// kinds added later are covered without a change here.
func ValidateListLengths(obj Object) FieldErrors {
	if p, ok := obj.(*Pod); ok {
		return validatePodSpecLengths(&p.Spec, NewPath("spec"))
	}
	if spec, path := templatePodSpec(obj); spec != nil {
		return validatePodSpecLengths(spec, path)
	}
	return nil
}

// templatePodSpec finds the pod template's spec of a workload object by
// its JSON field names, or returns nil.
func templatePodSpec(obj Object) (*PodSpec, Path) {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return nil, Path{}
	}
	for _, route := range [][]string{{"spec", "template", "spec"}, {"spec", "jobTemplate", "spec", "template", "spec"}} {
		cur := v.Elem()
		ok := true
		for _, name := range route {
			cur, ok = jsonField(cur, name)
			if !ok {
				break
			}
		}
		if ok && cur.CanAddr() {
			if ps, isSpec := cur.Addr().Interface().(*PodSpec); isSpec {
				return ps, NewPath(route[0], route[1:]...)
			}
		}
	}
	return nil, Path{}
}

// jsonField returns the field of struct v whose JSON name is name,
// following a non-nil pointer.
func jsonField(v reflect.Value, name string) (reflect.Value, bool) {
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return reflect.Value{}, false
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return reflect.Value{}, false
	}
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		tag, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if tag == name {
			return v.Field(i), true
		}
	}
	return reflect.Value{}, false
}

// validatePodSpecLengths checks the list caps of a pod spec at p.
func validatePodSpecLengths(s *PodSpec, p Path) FieldErrors {
	var errs FieldErrors
	check := func(n, max int, p Path) {
		if n > max {
			errs = append(errs, TooMany(p, n, max))
		}
	}
	check(len(s.Containers), MaxContainers, p.Child("containers"))
	check(len(s.InitContainers), MaxInitContainers, p.Child("initContainers"))
	check(len(s.Volumes), MaxVolumes, p.Child("volumes"))
	check(len(s.ImagePullSecrets), MaxImagePullSecrets, p.Child("imagePullSecrets"))
	check(len(s.Tolerations), MaxTolerations, p.Child("tolerations"))
	check(len(s.TopologySpreadConstraints), MaxTopologySpreadConstraints, p.Child("topologySpreadConstraints"))
	if len(errs) > 0 {
		return errs // the containers are not looked at one by one
	}
	for _, list := range []struct {
		name string
		cs   []Container
	}{{"initContainers", s.InitContainers}, {"containers", s.Containers}} {
		for i := range list.cs {
			c := &list.cs[i]
			cp := p.Child(list.name).Index(i)
			check(len(c.Ports), MaxPorts, cp.Child("ports"))
			check(len(c.Env), MaxEnv, cp.Child("env"))
			check(len(c.EnvFrom), MaxEnvFrom, cp.Child("envFrom"))
			check(len(c.VolumeMounts), MaxVolumeMounts, cp.Child("volumeMounts"))
		}
	}
	return errs
}
