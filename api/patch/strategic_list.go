package patch

import (
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
	for _, l := range [][]any{ol, pl} {
		for _, v := range l {
			if indexOf(merged, v) < 0 {
				merged = append(merged, v)
			}
		}
	}
	var fromPatch, serverOnly []any
	for _, v := range merged {
		if indexOf(pl, v) >= 0 {
			fromPatch = append(fromPatch, v)
		} else {
			serverOnly = append(serverOnly, v)
		}
	}
	sortByIndex(fromPatch, func(v any) int { return indexOf(pl, v) })
	return interleave(serverOnly, fromPatch, func(v any) int { return indexOf(ol, v) })
}

// mergeObjects merges two lists of objects by merge key: "$patch": "delete"
// elements remove their match, "$patch": "replace" makes the patch's other
// elements the whole list, the rest merge into the element with the same
// key or are added.
func mergeObjects(ol, pl []any, key string, es schema, path string) ([]any, error) {
	if key == "" {
		return nil, patchErr("%s: cannot merge a list of objects without a patchMergeKey", path)
	}
	orig := slices.Clone(ol)
	var items []map[string]any
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
			kv, ok := m[key]
			if !ok {
				return nil, patchErr("%s[%d]: \"$patch\": \"delete\" needs the merge key %q", path, i, key)
			}
			orig = slices.DeleteFunc(orig, func(o any) bool { return hasKey(o, key, kv) })
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
	merged := slices.Clone(orig)
	for _, m := range items {
		kv, ok := m[key]
		if !ok {
			return nil, patchErr("%s: element %s has no merge key %q", path, describe(m), key)
		}
		ep := fmt.Sprintf("%s[%s=%s]", path, key, describe(kv))
		if i := indexByKey(merged, key, kv); i >= 0 {
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
		merged = append(merged, v)
	}
	patchIndex := func(v any) int {
		for i, m := range items {
			if hasKey(v, key, m[key]) {
				return i
			}
		}
		return -1
	}
	var fromPatch, serverOnly []any
	for _, v := range merged {
		if patchIndex(v) >= 0 {
			fromPatch = append(fromPatch, v)
		} else {
			serverOnly = append(serverOnly, v)
		}
	}
	sortByIndex(fromPatch, patchIndex)
	return interleave(serverOnly, fromPatch, keyIndex(orig, key)), nil
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
	idx := func(list []any) func(any) int { return func(v any) int { return indexOf(list, v) } }
	if fm.mergeKey != "" {
		for i, o := range order {
			if m, ok := o.(map[string]any); !ok || m[fm.mergeKey] == nil {
				return patchErr("%s: element %d of $setElementOrder/%s has no merge key %q", path, i, field, fm.mergeKey)
			}
		}
		idx = func(list []any) func(any) int { return keyIndex(list, fm.mergeKey) }
	} else {
		for i, o := range order {
			if !isPrimitive(o) {
				return patchErr("%s: element %d of $setElementOrder/%s must be a primitive value", path, i, field)
			}
		}
	}
	if err := checkOrder(pl, order, idx(order), path, field); err != nil {
		return err
	}
	orderIndex := idx(order)
	var listed, serverOnly []any
	for _, v := range merged {
		if orderIndex(v) >= 0 {
			listed = append(listed, v)
		} else {
			serverOnly = append(serverOnly, v)
		}
	}
	sortByIndex(listed, orderIndex)
	sortByIndex(serverOnly, idx(ol))
	orig[field] = interleave(serverOnly, listed, idx(ol))
	return nil
}

// checkOrder verifies that the patch list's elements (directives aside)
// appear in the order list in the same relative order.
func checkOrder(pl, order []any, orderIndex func(any) int, path, field string) error {
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

// indexOf finds a primitive value in list.
func indexOf(list []any, v any) int {
	for i, e := range list {
		if isPrimitive(e) && equal(e, v) {
			return i
		}
	}
	return -1
}

// hasKey reports whether v is an object whose merge key equals kv.
func hasKey(v any, key string, kv any) bool {
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	mv, ok := m[key]
	return ok && isPrimitive(mv) && equal(mv, kv)
}

// indexByKey finds the first object of list whose merge key equals kv.
func indexByKey(list []any, key string, kv any) int {
	for i, e := range list {
		if hasKey(e, key, kv) {
			return i
		}
	}
	return -1
}

// keyIndex returns a function that finds an object's position in list by
// its merge key.
func keyIndex(list []any, key string) func(any) int {
	return func(v any) int {
		m, ok := v.(map[string]any)
		if !ok {
			return -1
		}
		kv, ok := m[key]
		if !ok {
			return -1
		}
		return indexByKey(list, key, kv)
	}
}
