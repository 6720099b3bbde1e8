package auth

import "errors"

// Errors of this package. Callers branch on them with errors.Is; the
// server's handlers map them to Status codes (401 for the token errors and
// ErrUnauthenticated, 403 for ErrNodeNameTaken, 422 for
// ErrInvalidNodeName, 404 for ErrTokenNotFound). None of them, nor any
// error this package wraps around them, contains token or secret text.
var (
	// ErrInvalidToken means a join token is malformed, unknown, or its
	// secret does not match. The three are not told apart on purpose.
	ErrInvalidToken = errors.New("auth: invalid join token")
	// ErrExpiredToken means a join token was valid but its expiration has
	// passed.
	ErrExpiredToken = errors.New("auth: join token has expired")
	// ErrWrongCA means a join token names a CA hash other than this
	// server's: it belongs to another cluster, or the CA was re-created.
	ErrWrongCA = errors.New("auth: join token is for a different cluster CA")
	// ErrNodeNameTaken means the node name has joined already and the
	// caller did not present that node's credential.
	ErrNodeNameTaken = errors.New("auth: node name is already joined; re-joining needs that node's credential")
	// ErrInvalidNodeName means a node name is not a DNS-1123 subdomain
	// short enough to name its credential.
	ErrInvalidNodeName = errors.New("auth: invalid node name")
	// ErrUnauthenticated means a bearer token is missing or matches no
	// admin token or node credential.
	ErrUnauthenticated = errors.New("auth: missing or invalid bearer token")
	// ErrTokenNotFound means no join token has the given id.
	ErrTokenNotFound = errors.New("auth: join token not found")
)
