package kubelet

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/skiffhq/skiff/agent/volumes"
	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/resource"
)

// ErrConfig marks a container config the agent cannot build from the
// pod: a missing secret or config map key, an unknown volume, a bad
// field reference. The container waits with CreateContainerConfigError.
var ErrConfig = errors.New("container config error")

// envInput is what env resolution needs besides the container.
type envInput struct {
	pod     *api.Pod
	podIP   string
	hostIP  string
	objects ObjectGetter
	// allocatable stands in for unset limits in resourceFieldRef.
	allocatable api.ResourceList
}

// envVar is one resolved variable.
type envVar struct{ name, value string }

// makeEnv resolves c's environment as the kubelet does: envFrom sources
// first, in order, then env in order; each env value may use $(VAR) of
// anything defined before it; a later definition of a name wins, keeping
// the first one's position. A missing object or key that is not optional
// is an ErrConfig.
func makeEnv(ctx context.Context, in envInput, c *api.Container) ([]envVar, error) {
	var order []string
	vals := map[string]string{}
	set := func(name, value string) {
		if _, ok := vals[name]; !ok {
			order = append(order, name)
		}
		vals[name] = value
	}
	cms := map[string]*api.ConfigMap{}
	secrets := map[string]*api.Secret{}
	getCM := func(name string) (*api.ConfigMap, error) {
		if cm, ok := cms[name]; ok {
			return cm, nil
		}
		if in.objects == nil {
			return nil, fmt.Errorf("%w: no object getter for configmap %q", ErrConfig, name)
		}
		cm, err := in.objects.GetConfigMap(ctx, in.pod.Namespace, name)
		if err != nil {
			return nil, err
		}
		cms[name] = cm
		return cm, nil
	}
	getSecret := func(name string) (*api.Secret, error) {
		if s, ok := secrets[name]; ok {
			return s, nil
		}
		if in.objects == nil {
			return nil, fmt.Errorf("%w: no object getter for secret %q", ErrConfig, name)
		}
		s, err := in.objects.GetSecret(ctx, in.pod.Namespace, name)
		if err != nil {
			return nil, err
		}
		secrets[name] = s
		return s, nil
	}
	missing := func(err error, optional bool, what string) error {
		if errors.Is(err, volumes.ErrObjectNotFound) {
			if optional {
				return nil
			}
			return fmt.Errorf("%w: %s not found", ErrConfig, what)
		}
		return fmt.Errorf("get %s: %w", what, err)
	}

	for _, from := range c.EnvFrom {
		switch {
		case from.ConfigMapRef != nil:
			ref := from.ConfigMapRef
			cm, err := getCM(ref.Name)
			if err != nil {
				if err := missing(err, isTrue(ref.Optional), "configmap "+ref.Name); err != nil {
					return nil, err
				}
				continue
			}
			for _, k := range sortedKeys(cm.Data) {
				if validEnvName(from.Prefix + k) {
					set(from.Prefix+k, cm.Data[k])
				}
			}
		case from.SecretRef != nil:
			ref := from.SecretRef
			s, err := getSecret(ref.Name)
			if err != nil {
				if err := missing(err, isTrue(ref.Optional), "secret "+ref.Name); err != nil {
					return nil, err
				}
				continue
			}
			for _, k := range sortedKeys(s.Data) {
				if validEnvName(from.Prefix + k) {
					set(from.Prefix+k, string(s.Data[k]))
				}
			}
		}
	}

	lookup := func(name string) (string, bool) { v, ok := vals[name]; return v, ok }
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			set(e.Name, expand(e.Value, lookup))
			continue
		}
		src := e.ValueFrom
		switch {
		case src.FieldRef != nil:
			v, err := podField(in, src.FieldRef.FieldPath)
			if err != nil {
				return nil, err
			}
			set(e.Name, v)
		case src.ResourceFieldRef != nil:
			v, err := resourceField(in, c, src.ResourceFieldRef)
			if err != nil {
				return nil, err
			}
			set(e.Name, v)
		case src.ConfigMapKeyRef != nil:
			ref := src.ConfigMapKeyRef
			cm, err := getCM(ref.Name)
			if err != nil {
				if err := missing(err, isTrue(ref.Optional), "configmap "+ref.Name); err != nil {
					return nil, err
				}
				continue
			}
			v, ok := cm.Data[ref.Key]
			if !ok {
				b, bok := cm.BinaryData[ref.Key]
				if !bok {
					if isTrue(ref.Optional) {
						continue
					}
					return nil, fmt.Errorf("%w: couldn't find key %s in ConfigMap %s/%s", ErrConfig, ref.Key, in.pod.Namespace, ref.Name)
				}
				v = string(b)
			}
			set(e.Name, v)
		case src.SecretKeyRef != nil:
			ref := src.SecretKeyRef
			s, err := getSecret(ref.Name)
			if err != nil {
				if err := missing(err, isTrue(ref.Optional), "secret "+ref.Name); err != nil {
					return nil, err
				}
				continue
			}
			v, ok := s.Data[ref.Key]
			if !ok {
				if isTrue(ref.Optional) {
					continue
				}
				return nil, fmt.Errorf("%w: couldn't find key %s in Secret %s/%s", ErrConfig, ref.Key, in.pod.Namespace, ref.Name)
			}
			set(e.Name, string(v))
		default:
			return nil, fmt.Errorf("%w: env %q: empty valueFrom", ErrConfig, e.Name)
		}
	}
	out := make([]envVar, 0, len(order))
	for _, n := range order {
		out = append(out, envVar{n, vals[n]})
	}
	return out, nil
}

// podField resolves a downward-API fieldRef.
func podField(in envInput, path string) (string, error) {
	p := in.pod
	for prefix, m := range map[string]map[string]string{"metadata.labels['": p.Labels, "metadata.annotations['": p.Annotations} {
		if rest, ok := strings.CutPrefix(path, prefix); ok {
			if key, ok := strings.CutSuffix(rest, "']"); ok {
				return m[key], nil
			}
		}
	}
	switch path {
	case "metadata.name":
		return p.Name, nil
	case "metadata.namespace":
		return p.Namespace, nil
	case "metadata.uid":
		return p.UID, nil
	case "spec.nodeName":
		return p.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return p.Spec.ServiceAccountName, nil
	case "status.hostIP", "status.hostIPs":
		return in.hostIP, nil
	case "status.podIP", "status.podIPs":
		return in.podIP, nil
	}
	return "", fmt.Errorf("%w: unsupported fieldRef %q", ErrConfig, path)
}

// resourceField resolves a resourceFieldRef: the value divided by the
// divisor (default 1), rounded up, as the kubelet does; an unset limit
// reads as the node's allocatable.
func resourceField(in envInput, c *api.Container, sel *api.ResourceFieldSelector) (string, error) {
	target := c
	if sel.ContainerName != "" && sel.ContainerName != c.Name {
		target = nil
		for _, cs := range [][]api.Container{in.pod.Spec.InitContainers, in.pod.Spec.Containers} {
			for i := range cs {
				if cs[i].Name == sel.ContainerName {
					target = &cs[i]
				}
			}
		}
		if target == nil {
			return "", fmt.Errorf("%w: resourceFieldRef names unknown container %q", ErrConfig, sel.ContainerName)
		}
	}
	kind, name, ok := strings.Cut(sel.Resource, ".")
	if !ok {
		return "", fmt.Errorf("%w: unsupported resourceFieldRef %q", ErrConfig, sel.Resource)
	}
	var q resource.Quantity
	var found bool
	switch kind {
	case "limits":
		q, found = target.Resources.Limits[api.ResourceName(name)]
		if !found {
			q, found = in.allocatable[api.ResourceName(name)]
		}
	case "requests":
		q, found = target.Resources.Requests[api.ResourceName(name)]
	default:
		return "", fmt.Errorf("%w: unsupported resourceFieldRef %q", ErrConfig, sel.Resource)
	}
	if !found {
		return "0", nil
	}
	div := int64(1000) // in milli-units: divisor 1
	if sel.Divisor != nil && sel.Divisor.Sign() > 0 {
		div = sel.Divisor.MilliValue()
	}
	if div <= 0 {
		return "", fmt.Errorf("%w: resourceFieldRef divisor too small", ErrConfig)
	}
	v := q.MilliValue()
	n := v / div
	if v%div != 0 {
		n++
	}
	return strconv.FormatInt(n, 10), nil
}

// validEnvName is Kubernetes' relaxed rule: printable ASCII but '=',
// not empty.
func validEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 32 || s[i] > 126 || s[i] == '=' {
			return false
		}
	}
	return true
}

func isTrue(b *bool) bool { return b != nil && *b }

// errConfigf is an ErrConfig with a message.
func errConfigf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrConfig, fmt.Sprintf(format, args...))
}
