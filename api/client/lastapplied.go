package client

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/patch"
)

// AnnotationLastApplied holds, on an object written by apply, the
// configuration that was applied, as kubectl keeps it: the next apply
// removes what the configuration no longer says and leaves alone what
// others (the scheduler, controllers, kubectl edit) set.
const AnnotationLastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// withLastApplied returns a copy of obj whose last-applied annotation is
// obj itself (without that annotation and without status) in JSON.
func withLastApplied(obj api.Object) (api.Object, error) {
	res, ok := api.ResourceOf(obj)
	if !ok {
		return nil, fmt.Errorf("unknown kind %T", obj)
	}
	m, err := toMap(obj)
	if err != nil {
		return nil, err
	}
	delete(m, "status")
	if md, ok := m["metadata"].(map[string]any); ok {
		delete(md, "resourceVersion")
		if ann, ok := md["annotations"].(map[string]any); ok {
			delete(ann, AnnotationLastApplied)
			if len(ann) == 0 {
				delete(md, "annotations")
			}
		}
	}
	applied, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encode last-applied configuration: %w", err)
	}
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("copy %s: %w", res.Kind, err)
	}
	out := res.New()
	if err := json.Unmarshal(data, out); err != nil {
		return nil, fmt.Errorf("copy %s: %w", res.Kind, err)
	}
	om := out.GetObjectMeta()
	om.Annotations = maps.Clone(om.Annotations)
	if om.Annotations == nil {
		om.Annotations = map[string]string{}
	}
	om.Annotations[AnnotationLastApplied] = string(applied)
	return out, nil
}

// mergeApplied computes what apply writes over cur for the configuration
// obj (which carries its last-applied annotation): cur with a three-way
// JSON merge patch applied, setting what obj says where cur differs and
// removing what the previous configuration (cur's annotation) said and
// obj no longer does. Fields neither configuration mentions — spec.nodeName
// set by the scheduler, labels added by hand — stay as they are. changed
// is false when the patch is empty.
func mergeApplied(res api.ResourceInfo, obj, cur api.Object) (api.Object, bool, error) {
	modified, err := toMap(obj)
	if err != nil {
		return nil, false, err
	}
	delete(modified, "status")
	if md, ok := modified["metadata"].(map[string]any); ok {
		delete(md, "resourceVersion")
	}
	current, err := toMap(cur)
	if err != nil {
		return nil, false, err
	}
	var original map[string]any
	if la := cur.GetObjectMeta().Annotations[AnnotationLastApplied]; la != "" {
		// A malformed annotation is treated as absent: nothing is
		// removed, everything obj says is set.
		if json.Unmarshal([]byte(la), &original) != nil {
			original = nil
		}
	}
	p := threeWayMerge(original, modified, current)
	if len(p) == 0 {
		return cur, false, nil
	}
	doc, err := json.Marshal(current)
	if err != nil {
		return nil, false, err
	}
	pb, err := json.Marshal(p)
	if err != nil {
		return nil, false, err
	}
	merged, err := patch.Merge(doc, pb)
	if err != nil {
		return nil, false, fmt.Errorf("merge applied configuration: %w", err)
	}
	out := res.New()
	if err := json.Unmarshal(merged, out); err != nil {
		return nil, false, fmt.Errorf("decode merged %s: %w", res.Kind, err)
	}
	return out, true, nil
}

// threeWayMerge returns the JSON merge patch that takes current to
// modified for every key modified sets (see subsumed), and deletes every key original
// set that modified no longer does (when current still has it).
func threeWayMerge(original, modified, current map[string]any) map[string]any {
	p := map[string]any{}
	for k, mv := range modified {
		cv, ok := current[k]
		mm, mIsMap := mv.(map[string]any)
		cm, cIsMap := cv.(map[string]any)
		switch {
		case mIsMap && cIsMap:
			om, _ := original[k].(map[string]any)
			if sub := threeWayMerge(om, mm, cm); len(sub) > 0 {
				p[k] = sub
			}
		case !ok || !subsumed(mv, cv):
			p[k] = mv
		}
	}
	for k := range original {
		if _, kept := modified[k]; kept {
			continue
		}
		if _, has := current[k]; has {
			p[k] = nil
		}
	}
	return p
}

// subsumed reports whether current already holds everything m says:
// equal scalars, maps whose every key m sets is subsumed, lists of the
// same length whose elements are. So fields the server defaulted inside
// list elements (a container's imagePullPolicy) do not count as a change,
// as they do not for kubectl's strategic merge patch; a list that does
// differ is replaced whole, and the server defaults it again.
func subsumed(m, current any) bool {
	switch mv := m.(type) {
	case map[string]any:
		cv, ok := current.(map[string]any)
		if !ok {
			return false
		}
		for k, v := range mv {
			c, ok := cv[k]
			if !ok || !subsumed(v, c) {
				return false
			}
		}
		return true
	case []any:
		cv, ok := current.([]any)
		if !ok || len(cv) != len(mv) {
			return false
		}
		for i := range mv {
			if !subsumed(mv[i], cv[i]) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(m, current)
}

func toMap(obj api.Object) (map[string]any, error) {
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("encode %T: %w", obj, err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("decode %T: %w", obj, err)
	}
	return m, nil
}
