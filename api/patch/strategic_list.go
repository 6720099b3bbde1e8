package patch

import (
	"encoding/json"
	"fmt"
	"slices"
)

// mergeList merges patch list pl into ol (nil for a new list) following
// fm's strategy: replace whole, or merge as a set of primitives or as
// objects identified by fm.mergeKey.
func mergeList(ol, pl []any, fm fieldMeta, path string) ([]any, error) {
	es := fm.elem()
	if !fm.merge {
		out := make([]any, len(pl))
		for i, e := range pl {
			v, err := newElement(e, es, fmt.Sprintf("%s[%d]", path, i))
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	}
	objects, err := listKind(ol, pl, path)
	if err != nil {
		return nil, err
	}
	if !objects {
		return mergePrimitives(ol, pl), nil
	}
	return mergeObjects(ol, pl, fm.mergeKey, es, path)
}

// newElement cleans an element of a list that is replaced whole: objects
// lose nulls and may not carry directives meant for merged lists.
func newElement(e any, es schema, path string) (any, error) {
	switch t := e.(type) {
	case map[string]any:
		if _, ok := t[directiveMarker]; ok {
			return nil, patchErr("%s: $patch is only allowed in the elements of lists with patchStrategy merge", path)
		}
		return mergeMap(nil, t, es, path)
	case []any:
		return deepCopy(t), nil
	default:
		return e, nil
	}
}

// listKind reports whether a merged list holds objects (true) or
// primitives (false); other mixtures cannot be merged.
func listKind(ol, pl []any, path string) (bool, error) {
	objects, prims := 0, 0
	for _, l := range [][]any{ol, pl} {
		for _, e := range l {
			switch e.(type) {
			case map[string]any:
				objects++
			case []any:
				return false, patchErr("%s: lists of lists cannot be merged", path)
			default:
				prims++
			}
		}
	}
	if objects > 0 && prims > 0 {
		return false, patchErr("%s: cannot merge a list that mixes objects and primitive values", path)
	}
	return objects > 0, nil
}

// mergePrimitives merges two lists of primitives as a set: the union
// without duplicates, the patch's values in patch order interleaved with
// the others in their original order.
func mergePrimitives(ol, pl []any) []any {
	var merged []any
	seen := map[string]bool{}
	for _, l := range [][]any{ol, pl} {
		for _, v := range l {
			if k := primKey(v); !seen[k] {
				seen[k] = true
				merged = append(merged, v)
			}
		}
	}
	patchPos, origPos := valuePositions(pl), valuePositions(ol)
	var fromPatch, serverOnly []any
	for _, v := range merged {
		if patchPos(v) >= 0 {
			fromPatch = append(fromPatch, v)
		} else {
			serverOnly = append(serverOnly, v)
		}
	}
	sortByIndex(fromPatch, patchPos)
	return interleave(serverOnly, fromPatch, origPos)
}

// mergeObjects merges two lists of objects by merge key: "$patch": "delete"
// elements remove their match, "$patch": "replace" makes the patch's other
// elements the whole list, the rest merge into the element with the same
// key or are added.
func mergeObjects(ol, pl []any, key string, es schema, path string) ([]any, error) {
	if key == "" {
		return nil, patchErr("%s: cannot merge a list of objects without a patchMergeKey", path)
	}
	var items []map[string]any
	deleted := map[string]bool{}
	replace := false
	for i, e := range pl {
		m := e.(map[string]any)
		d, has := m[directiveMarker]
		if !has {
			items = append(items, m)
			continue
		}
		switch d {
		case "delete":
			k, ok := mergeKeyOf(m, key)
			if !ok {
				return nil, patchErr("%s[%d]: \"$patch\": \"delete\" needs the merge key %q", path, i, key)
			}
			deleted[k] = true
		case "replace":
			replace = true
		case "merge":
			if len(m) > 1 {
				items = append(items, m)
			}
		default:
			return nil, patchErr("%s[%d]: unknown $patch value %s (want replace, merge or delete)", path, i, describe(d))
		}
	}
	if replace {
		out := make([]any, 0, len(items))
		for i, m := range items {
			v, err := mergeMap(nil, m, es, fmt.Sprintf("%s[%d]", path, i))
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	}
	orig := make([]any, 0, len(ol))
	for _, o := range ol {
		if k, ok := mergeKeyOf(o, key); !ok || !deleted[k] {
			orig = append(orig, o)
		}
	}
	merged := slices.Clone(orig)
	index := map[string]int{} // merge key -> first position in merged
	for i, o := range merged {
		if k, ok := mergeKeyOf(o, key); ok {
			if _, dup := index[k]; !dup {
				index[k] = i
			}
		}
	}
	patchPos := map[string]int{} // merge key -> first position in items
	for _, m := range items {
		k, ok := mergeKeyOf(m, key)
		if !ok {
			return nil, patchErr("%s: element %s has no merge key %q", path, describe(m), key)
		}
		if _, dup := patchPos[k]; !dup {
			patchPos[k] = len(patchPos)
		}
		ep := fmt.Sprintf("%s[%s=%s]", path, key, describe(m[key]))
		if i, ok := index[k]; ok {
			v, err := mergeMap(merged[i].(map[string]any), m, es, ep)
			if err != nil {
				return nil, err
			}
			merged[i] = v
			continue
		}
		v, err := mergeMap(nil, m, es, ep)
		if err != nil {
			return nil, err
		}
		index[k] = len(merged)
		merged = append(merged, v)
	}
	byPatch := func(v any) int {
		if k, ok := mergeKeyOf(v, key); ok {
			if i, ok := patchPos[k]; ok {
				return i
			}
		}
		return -1
	}
	var fromPatch, serverOnly []any
	for _, v := range merged {
		if byPatch(v) >= 0 {
			fromPatch = append(fromPatch, v)
		} else {
			serverOnly = append(serverOnly, v)
		}
	}
	sortByIndex(fromPatch, byPatch)
	return interleave(serverOnly, fromPatch, keyPositions(orig, key)), nil
}

// setElementOrder applies "$setElementOrder/<field>": the field's list is
// merged with the patch's as usual, then the elements the order list names
// take its order, interleaved with the remaining (server-only) elements.
func setElementOrder(orig, p map[string]any, field string, orderV any, fm fieldMeta, path string) error {
	order, ok := orderV.([]any)
	if !ok {
		return patchErr("%s: $setElementOrder/%s must be a list, not %s", path, field, kindName(orderV))
	}
	ol, foundOrig := orig[field].([]any)
	pv, foundPatch := p[field]
	var pl []any
	if foundPatch {
		if pl, ok = pv.([]any); !ok {
			return patchErr("%s: must be a list when $setElementOrder/%s is given, not %s", path, field, kindName(pv))
		}
	}
	if !foundOrig && !foundPatch {
		return nil
	}
	merged := ol
	if foundPatch {
		var err error
		if merged, err = mergeList(ol, pl, fm, path); err != nil {
			return err
		}
	}
	if !fm.merge {
		orig[field] = merged
		return nil
	}
	// idx finds an element's position in a list: by merge key for objects,
	// by value for primitives.
	idx := valuePositions
	if fm.mergeKey != "" {
		for i, o := range order {
			if m, ok := o.(map[string]any); !ok || m[fm.mergeKey] == nil {
				return patchErr("%s: element %d of $setElementOrder/%s has no merge key %q", path, i, field, fm.mergeKey)
			}
		}
		idx = func(list []any) func(any) int { return keyPositions(list, fm.mergeKey) }
	} else {
		for i, o := range order {
			if !isPrimitive(o) {
				return patchErr("%s: element %d of $setElementOrder/%s must be a primitive value", path, i, field)
			}
		}
	}
	orderIndex := idx(order)
	if err := checkOrder(pl, orderIndex, path, field); err != nil {
		return err
	}
	var listed, serverOnly []any
	for _, v := range merged {
		if orderIndex(v) >= 0 {
			listed = append(listed, v)
		} else {
			serverOnly = append(serverOnly, v)
		}
	}
	origPos := idx(ol)
	sortByIndex(listed, orderIndex)
	sortByIndex(serverOnly, origPos)
	orig[field] = interleave(serverOnly, listed, origPos)
	return nil
}

// checkOrder verifies that the patch list's elements (directives aside)
// appear in the order list in the same relative order.
func checkOrder(pl []any, orderIndex func(any) int, path, field string) error {
	last := -1
	for _, v := range pl {
		if m, ok := v.(map[string]any); ok {
			if _, ok := m[directiveMarker]; ok {
				continue
			}
		}
		i := orderIndex(v)
		if i < 0 {
			return patchErr("%s: element %s of the patch is missing from $setElementOrder/%s", path, describe(v), field)
		}
		if i < last {
			return patchErr("%s: the order of the patch list does not match $setElementOrder/%s", path, field)
		}
		last = i
	}
	return nil
}

// interleave merges two lists that are each already in order: every
// element of right keeps its place relative to the others of right, and
// an element of left goes before the current right one only when both
// have positions in the original list (serverPos) and left's is earlier.
// This is how Kubernetes places server-only elements among patched ones.
func interleave(left, right []any, serverPos func(any) int) []any {
	out := make([]any, 0, len(left)+len(right))
	i, j := 0, 0
	for i < len(left) || j < len(right) {
		switch {
		case j >= len(right):
			out = append(out, left[i])
			i++
		case i >= len(left):
			out = append(out, right[j])
			j++
		default:
			li, ri := serverPos(left[i]), serverPos(right[j])
			if li >= 0 && ri >= 0 && li < ri {
				out = append(out, left[i])
				i++
			} else {
				out = append(out, right[j])
				j++
			}
		}
	}
	return out
}

// sortByIndex stably sorts list by pos; elements without a position (-1)
// go last in their current order.
func sortByIndex(list []any, pos func(any) int) {
	slices.SortStableFunc(list, func(a, b any) int {
		pa, pb := pos(a), pos(b)
		if pa < 0 {
			pa = len(list) + 1<<30
		}
		if pb < 0 {
			pb = len(list) + 1<<30
		}
		return pa - pb
	})
}

// primKey is a map key identifying a primitive JSON value: values equal
// as JSON (numbers by value) have equal keys.
func primKey(v any) string {
	switch t := v.(type) {
	case nil:
		return "n"
	case bool:
		if t {
			return "t"
		}
		return "f"
	case string:
		return "s" + t
	case json.Number:
		if d, ok := canonicalNumber(string(t)); ok {
			sign := "+"
			if d.neg {
				sign = "-"
			}
			return "d" + sign + d.digits + "e" + d.exp.String()
		}
		return "N" + string(t)
	}
	return "?"
}

// valuePositions returns a function giving the first position of a
// primitive value in list, or -1.
func valuePositions(list []any) func(any) int {
	pos := make(map[string]int, len(list))
	for i, v := range list {
		if !isPrimitive(v) {
			continue
		}
		if _, dup := pos[primKey(v)]; !dup {
			pos[primKey(v)] = i
		}
	}
	return func(v any) int {
		if !isPrimitive(v) {
			return -1
		}
		if i, ok := pos[primKey(v)]; ok {
			return i
		}
		return -1
	}
}

// mergeKeyOf returns the key of object v's merge key value, if v is an
// object with a primitive value for key.
func mergeKeyOf(v any, key string) (string, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		return "", false
	}
	kv, ok := m[key]
	if !ok || kv == nil || !isPrimitive(kv) {
		return "", false
	}
	return primKey(kv), true
}

// keyPositions returns a function giving the first position in list of
// the object with the same merge key value, or -1.
func keyPositions(list []any, key string) func(any) int {
	pos := make(map[string]int, len(list))
	for i, v := range list {
		if k, ok := mergeKeyOf(v, key); ok {
			if _, dup := pos[k]; !dup {
				pos[k] = i
			}
		}
	}
	return func(v any) int {
		if k, ok := mergeKeyOf(v, key); ok {
			if i, ok := pos[k]; ok {
				return i
			}
		}
		return -1
	}
}
