package patch

import (
	"reflect"
	"slices"
	"strings"
)

// Strategic merge patch directives (see the Kubernetes API conventions).
const (
	directiveMarker               = "$patch"
	retainKeysDirective           = "$retainKeys"
	setElementOrderPrefix         = "$setElementOrder/"
	deleteFromPrimitiveListPrefix = "$deleteFromPrimitiveList/"
)

// Strategic applies a Kubernetes strategic merge patch to doc, a JSON
// object of Go type t (a struct or pointer to one), and returns the result.
//
// It is a JSON merge patch (objects merge, null deletes a key) except for
// lists: a field tagged patchStrategy:"merge" is merged — lists of objects
// element by element by their patchMergeKey, lists of primitives as a set —
// and every other list is replaced whole. New elements come first, then the
// existing ones, as Kubernetes orders them. The directives kubectl sends
// are honoured: "$patch": "replace", "merge" or "delete" in an object or a
// merged list's element, "$retainKeys", "$setElementOrder/<list>" and
// "$deleteFromPrimitiveList/<list>". Any other "$" key is an error, as is a
// patch that is not a JSON object. Members the type does not know are
// merged without list strategy; the caller's strict decoding rejects them.
//
// Within one object the patch is applied in a fixed order — $retainKeys,
// the ordered lists, the other members by name, then the deletions from
// primitive lists — so the result is deterministic. Metadata is read from t
// only along the paths the patch touches, so no schema needs building.
func Strategic(doc, patch []byte, t reflect.Type) ([]byte, error) {
	d, err := decodeDoc(doc)
	if err != nil {
		return nil, err
	}
	dm, ok := d.(map[string]any)
	if !ok {
		return nil, &docError{"the document is " + kindName(d) + ", not an object"}
	}
	p, err := decode(patch)
	if err != nil {
		return nil, patchErr("malformed strategic merge patch: %v", err)
	}
	pm, ok := p.(map[string]any)
	if !ok {
		return nil, patchErr("a strategic merge patch must be a JSON object, not %s", kindName(p))
	}
	out, err := mergeMap(dm, pm, newSchema(t), "")
	if err != nil {
		return nil, err
	}
	return encode(out)
}

// docError is a document that cannot be patched (not the patch's fault).
type docError struct{ msg string }

func (e *docError) Error() string { return e.msg }

// where names a path for messages.
func where(path string) string {
	if path == "" {
		return "the top level"
	}
	return path
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// mergeMap merges patch object p into orig (nil for a new object) and
// returns the result, which reuses orig. p is never modified.
func mergeMap(orig, p map[string]any, s schema, path string) (map[string]any, error) {
	var regular, orders, deletes []string
	directive, hasDirective := p[directiveMarker]
	retain, hasRetain := p[retainKeysDirective]
	for k := range p {
		switch {
		case k == directiveMarker || k == retainKeysDirective:
		case strings.HasPrefix(k, setElementOrderPrefix) && len(k) > len(setElementOrderPrefix):
			orders = append(orders, k)
		case strings.HasPrefix(k, deleteFromPrimitiveListPrefix) && len(k) > len(deleteFromPrimitiveListPrefix):
			deletes = append(deletes, k)
		case strings.HasPrefix(k, "$"):
			return nil, patchErr("%s: unknown directive %q (want $patch, $retainKeys, $setElementOrder/<list> or $deleteFromPrimitiveList/<list>)", where(path), k)
		default:
			regular = append(regular, k)
		}
	}
	slices.Sort(regular)
	slices.Sort(orders)
	slices.Sort(deletes)

	if hasDirective {
		switch directive {
		case "replace":
			rest := make(map[string]any, len(p)-1)
			for k, v := range p {
				if k != directiveMarker {
					rest[k] = v
				}
			}
			return mergeMap(nil, rest, s, path)
		case "delete":
			return map[string]any{}, nil
		case "merge": // the default
		default:
			return nil, patchErr("%s: unknown $patch value %v (want replace, merge or delete)", where(path), describe(directive))
		}
	}
	if orig == nil {
		orig = map[string]any{}
	}
	if hasRetain {
		if err := retainKeys(orig, p, retain, regular, path); err != nil {
			return nil, err
		}
	}
	ordered := map[string]bool{}
	for _, k := range orders {
		field := strings.TrimPrefix(k, setElementOrderPrefix)
		if err := setElementOrder(orig, p, field, p[k], s.field(field), join(path, field)); err != nil {
			return nil, err
		}
		ordered[field] = true
	}
	for _, k := range regular {
		if ordered[k] {
			continue
		}
		pv := p[k]
		if pv == nil {
			delete(orig, k)
			continue
		}
		ov, exists := orig[k]
		v, err := mergeField(ov, exists, pv, s.field(k), join(path, k))
		if err != nil {
			return nil, err
		}
		orig[k] = v
	}
	for _, k := range deletes {
		field := strings.TrimPrefix(k, deleteFromPrimitiveListPrefix)
		if err := deleteFromPrimitiveList(orig, field, p[k], join(path, field)); err != nil {
			return nil, err
		}
	}
	return orig, nil
}

// mergeField merges patch value pv into the existing value ov of a member.
func mergeField(ov any, exists bool, pv any, fm fieldMeta, path string) (any, error) {
	switch pt := pv.(type) {
	case map[string]any:
		om, ok := ov.(map[string]any)
		if !exists || !ok || fm.replace {
			return mergeMap(nil, pt, fm.schema, path)
		}
		return mergeMap(om, pt, fm.schema, path)
	case []any:
		ol, ok := ov.([]any)
		if !exists || !ok {
			ol = nil
		}
		if fm.replace {
			fm.merge = false
		}
		return mergeList(ol, pt, fm, path)
	default:
		return pv, nil
	}
}

// retainKeys applies "$retainKeys": members of orig not listed are
// cleared, and every member the patch sets must be listed.
func retainKeys(orig, p map[string]any, retain any, regular []string, path string) error {
	list, ok := retain.([]any)
	if !ok {
		return patchErr("%s: $retainKeys must be a list of field names, not %s", where(path), kindName(retain))
	}
	keep := make(map[string]bool, len(list))
	for _, v := range list {
		s, ok := v.(string)
		if !ok {
			return patchErr("%s: $retainKeys must be a list of field names; found %s", where(path), kindName(v))
		}
		keep[s] = true
	}
	for _, k := range regular {
		if p[k] != nil && !keep[k] {
			return patchErr("%s: the patch sets %q, which is not in its $retainKeys list", where(path), k)
		}
	}
	for k := range orig {
		if !keep[k] {
			delete(orig, k)
		}
	}
	return nil
}

// deleteFromPrimitiveList applies "$deleteFromPrimitiveList/<field>":
// every occurrence of the listed values is removed from orig's list.
func deleteFromPrimitiveList(orig map[string]any, field string, v any, path string) error {
	del, ok := v.([]any)
	if !ok {
		return patchErr("%s: $deleteFromPrimitiveList/%s must be a list, not %s", path, field, kindName(v))
	}
	for _, d := range del {
		if !isPrimitive(d) {
			return patchErr("%s: $deleteFromPrimitiveList/%s may only list primitive values; found %s", path, field, kindName(d))
		}
	}
	ov, exists := orig[field]
	if !exists {
		return nil
	}
	ol, ok := ov.([]any)
	if !ok {
		return patchErr("%s: $deleteFromPrimitiveList/%s applies to a list, but the object has %s", path, field, kindName(ov))
	}
	delPos := valuePositions(del)
	out := make([]any, 0, len(ol))
	for _, e := range ol {
		if delPos(e) < 0 {
			out = append(out, e)
		}
	}
	orig[field] = out
	return nil
}

// describe shows a small decoded value in a message.
func describe(v any) string {
	if s, ok := v.(string); ok {
		return `"` + s + `"`
	}
	b, err := encode(v)
	if err != nil || len(b) > 60 {
		return kindName(v)
	}
	return string(b)
}
