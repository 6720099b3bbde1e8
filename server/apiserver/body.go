package apiserver

import (
	"errors"
	"io"
	"mime"
	"net/http"

	"github.com/skiffhq/skiff/api"
)

// MaxBodyBytes is the largest request body accepted (SPEC: 3 MiB, 413 beyond).
const MaxBodyBytes = 3 << 20

// readBody reads r's body up to MaxBodyBytes.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if r.ContentLength > MaxBodyBytes {
		return nil, tooLarge()
	}
	body := http.MaxBytesReader(w, r.Body, MaxBodyBytes)
	var b []byte
	var err error
	if n := r.ContentLength; n > 0 {
		// The length is known (an agent's writes send it): one slice of
		// that size, where io.ReadAll grew one from 512 bytes, copying,
		// to twice what a 2 KiB pod needs. The server ends the body there.
		b = make([]byte, n)
		_, err = io.ReadFull(body, b)
	} else {
		b, err = io.ReadAll(body)
	}
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, tooLarge()
		}
		return nil, api.NewBadRequest("read request body: %v", err)
	}
	return b, nil
}

func tooLarge() error {
	return api.NewStatusError(http.StatusRequestEntityTooLarge, api.StatusReasonRequestEntityTooLarge,
		"the request body is larger than %d bytes", MaxBodyBytes)
}

// mediaType returns the media type of r's Content-Type ("" when absent).
func mediaType(r *http.Request) string {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return ""
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return ct
	}
	return mt
}

// DecodeBody decodes a request body into obj by r's content type, as
// the resource handlers do (JSON, YAML, or Kubernetes protobuf for the
// kinds kubectl sends that way), strictly. For handlers outside this
// package (reviews, token requests).
func DecodeBody(r *http.Request, body []byte, obj any) error { return decodeInto(r, body, obj) }

// decodeInto decodes body into obj by r's content type: JSON by default,
// YAML for application/yaml (and friends), Kubernetes protobuf for the
// few kinds protobuf.go knows. Unknown fields are an error.
func decodeInto(r *http.Request, body []byte, obj any) error {
	switch mediaType(r) {
	case "", "application/json", "application/merge-patch+json":
		return api.DecodeJSON(body, obj)
	case "application/yaml", "application/x-yaml", "text/yaml", "application/apply-patch+yaml":
		return api.DecodeYAML(body, obj)
	case protobufMediaType:
		js, err := protobufToJSON(body)
		if err != nil {
			return err
		}
		return api.DecodeJSON(js, obj)
	default:
		return api.NewStatusError(http.StatusUnsupportedMediaType, api.StatusReasonUnsupportedMediaType,
			"the body of the request was in an unknown format - accepted media types include: application/json, application/yaml")
	}
}
