package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/server/auth"
)

// maxSmallBody bounds the bodies of the join and token endpoints.
const maxSmallBody = 64 << 10

// DefaultJoinTokenTTL is the lifetime of a token created through
// POST /api/v1/skiff/tokens without a ttl.
const DefaultJoinTokenTTL = 24 * time.Hour

// JoinRequest is the body of POST /api/v1/join.
type JoinRequest struct {
	// Token is a join token, SKF1.<ca hash>.<id>.<secret>.
	Token string `json:"token"`
	// NodeName is the name the node joins as.
	NodeName string `json:"nodeName"`
	// NodeCredential is the node's credential from an earlier join; a
	// joined name may re-join only with it.
	NodeCredential string `json:"nodeCredential,omitempty"`
}

// JoinResponse is the answer to a successful join.
type JoinResponse struct {
	// NodeCredential is the node's bearer token for every later request.
	NodeCredential string `json:"nodeCredential"`
}

// CreateTokenRequest is the body of POST /api/v1/skiff/tokens.
type CreateTokenRequest struct {
	// TTL is a Go duration ("24h"); "" means DefaultJoinTokenTTL and "0s"
	// a token that never expires.
	TTL string `json:"ttl,omitempty"`
	// Description is free text shown by `skiff token list`.
	Description string `json:"description,omitempty"`
}

// TokenInfo describes a join token in the token endpoints' answers. Token
// is set only in the answer to its creation.
type TokenInfo struct {
	ID          string     `json:"id"`
	Token       string     `json:"token,omitempty"`
	Description string     `json:"description,omitempty"`
	Usage       string     `json:"usage,omitempty"`
	Expires     *time.Time `json:"expires,omitempty"`
	Created     *time.Time `json:"created,omitempty"`
}

// TokenList is the answer to GET /api/v1/skiff/tokens.
type TokenList struct {
	Items []TokenInfo `json:"items"`
}

// joinStatus maps auth's join errors to the Status answered, per
// auth/errors.go. ok is false for errors that are the server's fault.
func joinStatus(err error) (st *api.StatusError, ok bool) {
	switch {
	case errors.Is(err, auth.ErrInvalidToken), errors.Is(err, auth.ErrExpiredToken), errors.Is(err, auth.ErrWrongCA):
		return unauthorized(err.Error()), true
	case errors.Is(err, auth.ErrNodeNameTaken):
		return forbidden(err.Error()), true
	case errors.Is(err, auth.ErrInvalidNodeName):
		st := api.NewStatusError(http.StatusUnprocessableEntity, api.StatusReasonInvalid, "%s", err.Error())
		st.Status.Details = &api.StatusDetails{Causes: []api.StatusCause{{Type: "FieldValueInvalid", Field: "nodeName", Message: err.Error()}}}
		return st, true
	case errors.Is(err, auth.ErrTokenNotFound):
		return api.NewStatusError(http.StatusNotFound, api.StatusReasonNotFound, "%s", err.Error()), true
	}
	return api.NewStatusError(http.StatusInternalServerError, api.StatusReasonInternalError, "internal error"), false
}

// decodeSmall strictly decodes a JSON body of at most maxSmallBody bytes.
func decodeSmall(w http.ResponseWriter, r *http.Request, v any) *api.StatusError {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxSmallBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return api.NewStatusError(http.StatusRequestEntityTooLarge, api.StatusReasonRequestEntityTooLarge, "the request body is larger than %d bytes", maxSmallBody)
		}
		return api.NewBadRequest("malformed JSON body: %v", err)
	}
	if dec.More() {
		return api.NewBadRequest("malformed JSON body: more than one value")
	}
	return nil
}

// join serves POST /api/v1/join: it exchanges a join token for a node
// credential. Attempts are rate-limited per client address. Tokens and
// credentials are never logged.
func (s *server) join(w http.ResponseWriter, r *http.Request) {
	if !s.joinLimiter.Allow(clientIP(r)) {
		refuseUnreadBody(w, r)
		writeTooMany(w)
		return
	}
	var req JoinRequest
	if st := decodeSmall(w, r, &req); st != nil {
		writeStatus(w, st)
		return
	}
	cred, err := s.tokens.Join(r.Context(), req.Token, req.NodeName, req.NodeCredential)
	if err != nil {
		st, ok := joinStatus(err)
		level := slog.LevelWarn
		if !ok {
			level = slog.LevelError
		}
		s.log.LogAttrs(r.Context(), level, "join refused", slog.String("node", req.NodeName), slog.String("remote", clientIP(r)), slog.Any("err", err))
		writeStatus(w, st)
		return
	}
	s.log.LogAttrs(r.Context(), slog.LevelInfo, "node joined", slog.String("node", req.NodeName), slog.String("remote", clientIP(r)))
	writeJSON(w, http.StatusOK, JoinResponse{NodeCredential: cred})
}

// createToken serves POST /api/v1/skiff/tokens (admin only).
func (s *server) createToken(w http.ResponseWriter, r *http.Request) {
	var req CreateTokenRequest
	if r.ContentLength != 0 {
		if st := decodeSmall(w, r, &req); st != nil {
			writeStatus(w, st)
			return
		}
	}
	ttl := DefaultJoinTokenTTL
	if req.TTL != "" {
		d, err := time.ParseDuration(req.TTL)
		if err != nil || d < 0 {
			writeStatus(w, api.NewBadRequest("ttl %q: want a non-negative duration such as 24h", req.TTL))
			return
		}
		ttl = d
	}
	jt, err := s.tokens.CreateJoinToken(r.Context(), ttl, req.Description)
	if err != nil {
		if len(req.Description) > auth.MaxDescriptionLen {
			writeStatus(w, api.NewBadRequest("description is longer than %d bytes", auth.MaxDescriptionLen))
			return
		}
		s.log.LogAttrs(r.Context(), slog.LevelError, "create join token", slog.Any("err", err))
		writeStatus(w, api.NewStatusError(http.StatusInternalServerError, api.StatusReasonInternalError, "internal error"))
		return
	}
	info := TokenInfo{ID: jt.ID, Token: jt.String(), Description: req.Description, Usage: "join"}
	if ttl > 0 {
		exp := s.clk.Now().Add(ttl).UTC().Truncate(time.Second)
		info.Expires = &exp
	}
	s.log.LogAttrs(r.Context(), slog.LevelInfo, "join token created", slog.String("id", jt.ID), slog.Duration("ttl", ttl))
	writeJSON(w, http.StatusCreated, info)
}

// listTokens serves GET /api/v1/skiff/tokens (admin only).
func (s *server) listTokens(w http.ResponseWriter, r *http.Request) {
	infos, err := s.tokens.ListJoinTokens(r.Context())
	if err != nil {
		s.log.LogAttrs(r.Context(), slog.LevelError, "list join tokens", slog.Any("err", err))
		writeStatus(w, api.NewStatusError(http.StatusInternalServerError, api.StatusReasonInternalError, "internal error"))
		return
	}
	out := TokenList{Items: make([]TokenInfo, 0, len(infos))}
	for _, in := range infos {
		ti := TokenInfo{ID: in.ID, Description: in.Description, Usage: in.Usage}
		if !in.Expires.IsZero() {
			ti.Expires = &in.Expires
		}
		if !in.Created.IsZero() {
			ti.Created = &in.Created
		}
		out.Items = append(out.Items, ti)
	}
	writeJSON(w, http.StatusOK, out)
}

// deleteToken serves DELETE /api/v1/skiff/tokens/{id} (admin only).
func (s *server) deleteToken(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	if err := s.tokens.DeleteJoinToken(r.Context(), id); err != nil {
		st, ok := joinStatus(err)
		if !ok {
			s.log.LogAttrs(r.Context(), slog.LevelError, "delete join token", slog.Any("err", err))
		}
		writeStatus(w, st)
		return
	}
	s.log.LogAttrs(r.Context(), slog.LevelInfo, "join token deleted", slog.String("id", id))
	writeJSON(w, http.StatusOK, api.Status{
		TypeMeta: api.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   "Success",
		Message:  fmt.Sprintf("join token %q deleted", id),
		Code:     http.StatusOK,
	})
}

// writeStatus answers with st's Status and code.
func writeStatus(w http.ResponseWriter, st *api.StatusError) {
	writeJSON(w, int(st.Status.Code), &st.Status)
}

// writeJSON answers code with v as JSON.
func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		code = http.StatusInternalServerError
		b = []byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"internal error: encode response","reason":"InternalError","code":500}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	w.Write(append(b, '\n'))
}
