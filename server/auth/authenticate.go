package auth

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"strconv"

	"github.com/skiffhq/skiff/api"
)

// Identity is who a request acts as. The zero Identity is anonymous.
type Identity struct {
	// Admin is set for the admin token: full access (cluster-admin).
	Admin bool
	// Node is the node name a node credential is bound to; node
	// identities have their own authorizer (Authorize).
	Node string
	// User, UID and Groups identify everyone else (service accounts,
	// today), whom RBAC authorizes. GroupAuthenticated is implied.
	User   string
	UID    string
	Groups []string
}

// IsAnonymous reports whether id is the zero Identity.
func (id Identity) IsAnonymous() bool { return !id.Admin && id.Node == "" && id.User == "" }

// String returns "admin", `node "<name>"`, `user "<name>"` or
// "anonymous", as used in authorization reasons.
func (id Identity) String() string {
	switch {
	case id.Admin:
		return "admin"
	case id.Node != "":
		return "node " + strconv.Quote(id.Node)
	case id.User != "":
		return "user " + strconv.Quote(id.User)
	default:
		return "anonymous"
	}
}

// UserInfo returns id as Kubernetes names it: the admin is skiff:admin in
// system:masters, a node system:node:<name> in system:nodes, and every
// authenticated identity is in system:authenticated.
func (id Identity) UserInfo() api.UserInfo {
	switch {
	case id.Admin:
		return api.UserInfo{Username: UserAdmin, Groups: []string{GroupMasters, GroupAuthenticated}}
	case id.Node != "":
		return api.UserInfo{Username: nodeUserPrefix + id.Node, Groups: []string{GroupNodes, GroupAuthenticated}}
	case id.User != "":
		return api.UserInfo{Username: id.User, UID: id.UID, Groups: append(append([]string(nil), id.Groups...), GroupAuthenticated)}
	}
	return api.UserInfo{Username: "system:anonymous", Groups: []string{"system:unauthenticated"}}
}

// Authenticate returns the identity of a bearer token (the text after
// "Bearer "): Identity{Admin: true} for the admin token, compared in
// constant time; Identity{Node: name} for a node credential; otherwise
// ErrUnauthenticated. Other errors mean the store failed and the request
// should fail as unavailable rather than unauthenticated.
//
// Node credentials that authenticated recently are answered from a
// bounded in-memory cache (see Config.CacheSize, CacheTTL and
// Invalidated); a credential deleted through DeleteNodeCredential is
// refused from the moment that call returns, and with Config.Invalidated
// so is one deleted or replaced in the store any other way (the API,
// another server).
func (t *Tokens) Authenticate(ctx context.Context, bearer string) (Identity, error) {
	if bearer == "" {
		return Identity{}, ErrUnauthenticated
	}
	if t.hasAdmin {
		// Comparing hashes keeps the comparison constant-time whatever
		// the lengths.
		h := sha256.Sum256([]byte(bearer))
		if subtle.ConstantTimeCompare(h[:], t.adminHash[:]) == 1 {
			return Identity{Admin: true}, nil
		}
	}
	node, secret, ok := parseNodeCredential(bearer)
	if !ok {
		return Identity{}, ErrUnauthenticated
	}
	now := t.clk.Now()
	if stored, ok := t.cache.get(node, now); ok && hashMatches(stored, secret) {
		return Identity{Node: node}, nil
	}
	// On a miss, or a mismatch that may be a credential re-issued since
	// it was cached, ask the store.
	gen := t.cache.generation(node)
	t.storeReads.Add(1)
	s, err := t.store.GetSecret(ctx, SystemNamespace, NodeCredentialSecretPrefix+node)
	if api.IsNotFound(err) {
		return Identity{}, ErrUnauthenticated
	}
	if err != nil {
		return Identity{}, fmt.Errorf("auth: authenticate node %q: read credential: %w", node, err)
	}
	stored, err := decodeNodeCredential(s, node)
	if err != nil {
		// The stored object is damaged; say so, still as a 401.
		return Identity{}, fmt.Errorf("%w: %w", ErrUnauthenticated, err)
	}
	if !hashMatches(stored, secret) {
		return Identity{}, ErrUnauthenticated
	}
	t.cache.put(node, stored, now, gen)
	return Identity{Node: node}, nil
}

// StoreReads returns how many node credential checks read the store (a
// cache miss).
func (t *Tokens) StoreReads() uint64 { return t.storeReads.Load() }
