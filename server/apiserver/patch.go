package apiserver

import (
	"bytes"
	"net/http"
	"reflect"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/patch"
)

// Patch media types a PATCH may carry (Content-Type).
const (
	mergePatchType     = "application/merge-patch+json"
	strategicPatchType = "application/strategic-merge-patch+json"
	jsonPatchType      = "application/json-patch+json"
	applyPatchType     = "application/apply-patch+yaml"
)

// supportedPatchTypes is the list the 415 answer names.
const supportedPatchTypes = mergePatchType + ", " + strategicPatchType + " or " + jsonPatchType

// unsupportedPatch is the 415 answer for a PATCH of media type mt.
func unsupportedPatch(contentType, mt string) *api.StatusError {
	hint := ""
	if mt == applyPatchType {
		hint = " (server-side apply is not supported: use client-side kubectl apply)"
	}
	return api.NewStatusError(http.StatusUnsupportedMediaType, api.StatusReasonUnsupportedMediaType,
		"the patch type %q is not supported%s; use %s", contentType, hint, supportedPatchTypes)
}

// isPatchType reports whether mt is a patch type applyPatch understands.
func isPatchType(mt string) bool {
	return mt == mergePatchType || mt == strategicPatchType || mt == jsonPatchType
}

// applyPatch applies body, a patch of media type mt, to doc, the JSON of
// the current object; into is a new object of the same kind (its Go type
// gives the strategic merge patch its list strategies). A patch that cannot be applied is
// a 400 naming the problem; whether the result is a valid object is for
// the caller's decoding and validation to say.
func applyPatch(mt string, doc, body []byte, into api.Object) ([]byte, error) {
	var out []byte
	var err error
	switch mt {
	case mergePatchType:
		return mergePatch(doc, body)
	case strategicPatchType:
		out, err = patch.Strategic(doc, body, reflect.TypeOf(into))
	case jsonPatchType:
		out, err = patch.JSON(doc, body)
	default:
		return nil, unsupportedPatch(mt, mt)
	}
	if err != nil {
		if patch.IsPatchError(err) {
			return nil, api.NewBadRequest("%v", err)
		}
		return nil, err
	}
	return out, nil
}

// mergePatch applies an RFC 7386 merge patch, which must be a JSON object
// (for a Scale, a strategic merge patch is the same thing).
func mergePatch(doc, body []byte) ([]byte, error) {
	if b := bytes.TrimLeft(body, " \t\r\n"); len(b) == 0 || b[0] != '{' {
		return nil, api.NewBadRequest("a merge patch must be a JSON object")
	}
	out, err := patch.Merge(doc, body)
	if err != nil {
		if patch.IsPatchError(err) {
			return nil, api.NewBadRequest("%v", err)
		}
		return nil, err
	}
	return out, nil
}
