package patch

// Merge applies an RFC 7386 JSON merge patch to doc: objects merge
// recursively, null deletes a key, and anything else (arrays included)
// replaces. A patch that is not an object replaces the whole document.
// Numbers are kept exactly as written.
func Merge(doc, patch []byte) ([]byte, error) {
	d, err := decodeDoc(doc)
	if err != nil {
		return nil, err
	}
	p, err := decode(patch)
	if err != nil {
		return nil, patchErr("malformed merge patch: %v", err)
	}
	return encode(mergeValue(d, p))
}

// mergeValue is RFC 7386 MergePatch(Target, Patch). It may reuse parts of
// doc and patch in its result.
func mergeValue(doc, patch any) any {
	pm, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	dm, ok := doc.(map[string]any)
	if !ok {
		dm = map[string]any{}
	}
	for k, pv := range pm {
		if pv == nil {
			delete(dm, k)
			continue
		}
		dm[k] = mergeValue(dm[k], pv)
	}
	return dm
}
