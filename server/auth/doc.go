// Package auth owns who may talk to the server and what they may do: join
// tokens, node credentials, the admin token, service account tokens,
// bearer authentication, rate limiting of the token endpoints, and
// authorization: the node authorizer (Authorize) and NodeRestriction's
// rules (MirrorPodReferences, IsAllowedSelfLabel), and RBAC's matching
// (RuleAllows, Covers, SubjectMatches) with the default ClusterRoles. The
// server reads roles and bindings from the store; the decisions here are
// pure functions.
//
// # Bearer material
//
// Three kinds, each a prefix with a format version, a dot, and fields
// that never contain dots except a node name:
//
//	SKF1.<ca hash>.<id>.<secret>   join token
//	SKA1.<64 hex>                  admin token (admin.token)
//	SKN1.<node name>.<64 hex>      node credential, bound to one node name
//	SKS1.<base64url payload>.<base64url HMAC-SHA256>
//	                               service account token (namespace, name,
//	                               uid, expiry), signed with serviceaccount.key
//
// A join token's <ca hash> is the SHA-256 hex of ca.crt (tlsutil.CAHash),
// <id> is 6 characters [a-z0-9] and public, and <secret> is 32 characters
// of lowercase base32 ([a-z2-7], 160 bits from crypto/rand). Admin tokens
// and node credentials carry 32 random bytes in lowercase hex; a node
// credential names its node so that it is checked with one store read.
//
// # What is stored
//
// Only SHA-256 hashes of secrets (see HashSecret for why not a slow KDF),
// as Secrets in the skiff-system namespace, like kubeadm's bootstrap
// tokens in kube-system:
//
//	skiff-token-<id>     type skiff.io/join-token       token-id, secret-hash, description, expiration (RFC 3339; absent: never), usage ("join")
//	skiff-node-<node>    type skiff.io/node-credential  node-name, secret-hash
//
// The admin token lives only in admin.token (mode 0600), read at start.
//
// # Joining
//
// Tokens.Join checks a join token (CA hash, secret, expiry) and returns the
// node's credential: a new one for a name not yet joined; for a joined name
// only the caller's own, unchanged (no impersonation, no rotation). See
// Join for the reasons.
//
// # Boundaries
//
// There is no HTTP here: the server's handlers parse requests, call
// Tokens.Authenticate, Limiter.Allow and Authorize, and turn the results
// and errors into Status answers. Authorize is a pure function; the server
// looks up the facts it needs (which node a pod is bound to, whether a
// secret is referenced by a node's pods) and passes them in a Request.
// Storage is reached only through the SecretStore interface declared here.
// Nothing in this package logs, and no error it returns contains token or
// secret text. It must not import storage, server/api or agent.
package auth
