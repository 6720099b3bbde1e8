package server

import (
	"context"
	"encoding/base64"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strings"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/server/auth"
)

// identityKey is the context key of the authenticated auth.Identity.
type identityKey struct{}

// withIdentity returns ctx carrying id.
func withIdentity(ctx context.Context, id auth.Identity) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}

// identityFrom returns the identity the authenticate middleware stored in
// ctx (in the request's requestInfo, or as a value of its own where no
// request log runs), or the anonymous identity.
func identityFrom(ctx context.Context) auth.Identity {
	if id, ok := ctx.Value(identityKey{}).(auth.Identity); ok {
		return id
	}
	if ri := requestInfoFrom(ctx); ri != nil && ri.authenticated {
		return ri.id
	}
	return auth.Identity{}
}

// bearerToken returns the token of an "Authorization: Bearer <token>"
// header; for a WebSocket upgrade without that header, the token of a
// "base64url.bearer.authorization.k8s.io.<token>" subprotocol (browsers
// cannot set headers on a WebSocket; Kubernetes reads the same); or "".
func bearerToken(r *http.Request) string {
	h := r.Header.Get("Authorization")
	if h == "" && strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		return websocketBearer(r)
	}
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(tok)
}

// wsBearerPrefix starts the subprotocol that carries a bearer token.
const wsBearerPrefix = "base64url.bearer.authorization.k8s.io."

// websocketBearer decodes the bearer-token subprotocol of r, or "".
func websocketBearer(r *http.Request) string {
	for _, v := range r.Header.Values("Sec-WebSocket-Protocol") {
		for _, p := range strings.Split(v, ",") {
			enc, ok := strings.CutPrefix(strings.TrimSpace(p), wsBearerPrefix)
			if !ok {
				continue
			}
			b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(enc, "="))
			if err != nil {
				return ""
			}
			return string(b)
		}
	}
	return ""
}

// clientIP is the rate-limit key of r: the peer address without its port.
// Forwarding headers are not trusted: skiff is not meant to sit behind a
// proxy that would set them.
func clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// authenticate requires a valid bearer token and puts its identity in the
// request context (and the request log). A missing or wrong token is a 401
// Status; repeated failures from one address are a 429 once its failure
// budget (authLimiter) is spent. A store failure is a 503.
func (s *server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r, ok := s.identify(w, r)
		if ok {
			next.ServeHTTP(w, r)
		}
	})
}

// identify is authenticate's check: it returns r carrying the identity
// of its token, or answers w and returns false. It is a method of its
// own, not inlined, so that its frame is not under the handler for as
// long as the handler runs (an agent's shared watch stream: its whole
// connection).
//
//go:noinline
func (s *server) identify(w http.ResponseWriter, r *http.Request) (*http.Request, bool) {
	tok := bearerToken(r)
	var id auth.Identity
	var err error
	if auth.IsServiceAccountToken(tok) {
		id, err = s.saTokens.Authenticate(r.Context(), tok)
	} else {
		id, err = s.tokens.Authenticate(r.Context(), tok)
	}
	switch {
	case errors.Is(err, auth.ErrUnauthenticated):
		// No body of an unauthenticated request is read: the answer
		// goes at once, and the connection with it.
		refuseUnreadBody(w, r)
		if !s.authLimiter.Allow(clientIP(r)) {
			writeTooMany(w)
			return r, false
		}
		writeStatus(w, unauthorized("Unauthorized"))
		return r, false
	case err != nil:
		s.log.LogAttrs(r.Context(), slog.LevelError, "authenticate", slog.Any("err", err))
		writeStatus(w, api.NewStatusError(http.StatusServiceUnavailable, api.StatusReasonServiceUnavailable, "cannot check credentials right now"))
		return r, false
	}
	if ri := requestInfoFrom(r.Context()); ri != nil {
		ri.id, ri.authenticated = id, true
		return r, true
	}
	return r.WithContext(withIdentity(r.Context(), id)), true
}

// requireAdmin refuses every identity but the admin with 403.
func requireAdmin(next http.Handler) http.Handler { return requireAdminFor("manage join tokens")(next) }

// requireAdminFor refuses every identity but the admin with a 403 saying
// it may not do what.
func requireAdminFor(what string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if id := identityFrom(r.Context()); !id.Admin {
				writeStatus(w, forbidden(id.String()+" may not "+what))
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

func unauthorized(msg string) *api.StatusError {
	return api.NewStatusError(http.StatusUnauthorized, api.StatusReasonUnauthorized, "%s", msg)
}

func forbidden(msg string) *api.StatusError {
	return api.NewStatusError(http.StatusForbidden, api.StatusReasonForbidden, "%s", msg)
}

// writeTooMany answers 429 with a Retry-After of one refill period.
func writeTooMany(w http.ResponseWriter) {
	w.Header().Set("Retry-After", "6")
	writeStatus(w, api.NewStatusError(http.StatusTooManyRequests, api.StatusReasonTooManyRequests, "too many attempts from this address; retry later"))
}
