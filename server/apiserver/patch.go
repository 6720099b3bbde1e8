package apiserver

import (
	"bytes"
	"encoding/json"

	"github.com/skiffhq/skiff/api"
)

// mergePatch applies an RFC 7386 JSON merge patch to doc: objects merge
// recursively, null deletes a key, anything else replaces.
func mergePatch(doc, patch []byte) ([]byte, error) {
	d, err := decodeNumbers(doc)
	if err != nil {
		return nil, err
	}
	p, err := decodeNumbers(patch)
	if err != nil {
		return nil, api.NewBadRequest("malformed merge patch: %v", err)
	}
	if _, ok := p.(map[string]any); !ok {
		return nil, api.NewBadRequest("a merge patch must be a JSON object")
	}
	return json.Marshal(mergeValue(d, p))
}

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

// decodeNumbers decodes JSON keeping numbers exact (json.Number).
func decodeNumbers(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}
