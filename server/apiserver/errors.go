package apiserver

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/storage"
)

// toStatus translates any error a handler meets into the StatusError the
// client receives. It is the one place storage and decoding errors become
// HTTP codes.
func toStatus(err error, res *api.ResourceInfo, name string) *api.StatusError {
	var se *api.StatusError
	if errors.As(err, &se) {
		return se
	}
	var de *api.DecodeError
	if errors.As(err, &de) {
		return api.NewBadRequest("%s", de.Error())
	}
	var fe api.FieldErrors
	if errors.As(err, &fe) {
		kind := ""
		if res != nil {
			kind = res.Kind
		}
		return api.NewInvalid(kind, name, fe)
	}
	resource := ""
	if res != nil {
		resource = res.Resource
		if res.Group != "" {
			resource += "." + res.Group
		}
	}
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return api.NewNotFound(resource, name)
	case errors.Is(err, storage.ErrExists):
		return api.NewAlreadyExists(resource, name)
	case errors.Is(err, storage.ErrConflict):
		return api.NewConflict(resource, name, "the object has been modified; please apply your changes to the latest version and try again")
	case errors.Is(err, storage.ErrCompacted), errors.Is(err, storage.ErrTooSlow):
		return api.NewGone("too old resource version: %s", err)
	case errors.Is(err, storage.ErrInvalid):
		return api.NewBadRequest("%s", err)
	case errors.Is(err, storage.ErrTooLarge):
		return api.NewStatusError(http.StatusRequestEntityTooLarge, api.StatusReasonRequestEntityTooLarge,
			"the object would be larger than %d bytes once stored", api.MaxObjectBytes)
	case errors.Is(err, storage.ErrNoSpace):
		return api.NewStatusError(http.StatusInsufficientStorage, api.StatusReasonInsufficientStorage, "the server's disk is full; writes are refused until space is freed (deletes still work)")
	case errors.Is(err, storage.ErrUnavailable), errors.Is(err, storage.ErrFenced):
		return api.NewStatusError(http.StatusServiceUnavailable, api.StatusReasonServiceUnavailable, "the datastore is unavailable; retry later")
	case errors.Is(err, storage.ErrClosed):
		return api.NewStatusError(http.StatusServiceUnavailable, api.StatusReasonServiceUnavailable, "the server is shutting down")
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return api.NewStatusError(http.StatusGatewayTimeout, api.StatusReasonTimeout, "the request was cancelled or timed out")
	}
	return api.NewStatusError(http.StatusInternalServerError, api.StatusReasonInternalError, "internal error")
}

// writeError answers r with err as a Status body. Internal errors are
// logged with their detail; the client sees only "internal error".
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error, res *api.ResourceInfo, name string) {
	st := toStatus(err, res, name)
	if st.Status.Code >= 500 {
		s.log.LogAttrs(r.Context(), slog.LevelError, "request failed", slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.Any("err", err))
	}
	writeStatus(w, st)
}

func writeStatus(w http.ResponseWriter, st *api.StatusError) {
	writeJSON(w, int(st.Status.Code), &st.Status)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		code = http.StatusInternalServerError
		b = []byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"internal error: encode response","reason":"InternalError","code":500}`)
	}
	writeRaw(w, code, b)
}

func writeRaw(w http.ResponseWriter, code int, b []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	w.Write(b)
	w.Write([]byte("\n"))
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		return []byte(`{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","message":"internal error","code":500}}`)
	}
	return b
}
