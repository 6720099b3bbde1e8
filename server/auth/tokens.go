package auth

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/clock"
)

// Defaults for Config.
const (
	// DefaultCacheSize holds a fleet of 16,384 nodes: an entry is a name
	// and a hash (about 200 bytes). Sized below the fleet, every
	// heartbeat of the nodes beyond it misses, reads the store and
	// hashes: the fleet simulator saw 4,700 agents on a 1,024-entry
	// cache fill SQLite's read pool and the in-flight limit, and answer
	// 429 to everything.
	DefaultCacheSize = 16384
	DefaultCacheTTL  = time.Minute
	// MaxDescriptionLen bounds a join token's description, in bytes.
	MaxDescriptionLen = 512
	// minAdminTokenLen refuses admin tokens short enough to guess.
	minAdminTokenLen = 16
)

// Config wires a Tokens. Build it in cmd and check it with Validate.
type Config struct {
	// Store persists join tokens and node credentials. Required.
	Store SecretStore
	// CAHash is tlsutil.CAHash of ca.crt: 64 lowercase hex digits.
	// Required.
	CAHash string
	// AdminToken is the content of admin.token (see EnsureAdminToken). ""
	// disables admin authentication.
	AdminToken string
	// Clock decides token expiry and cache age. nil means the wall clock.
	Clock clock.Clock
	// CacheSize is how many node credentials Authenticate remembers; 0
	// means DefaultCacheSize and a negative value disables the cache.
	CacheSize int
	// CacheTTL is how long a remembered credential is trusted without
	// reading the store again; 0 means DefaultCacheTTL. Not used when
	// Invalidated is set.
	CacheTTL time.Duration
	// Invalidated says the caller calls SecretChanged for every change
	// to a Secret synchronously, before the change's writer is answered
	// (storage.ChangeHook), and SecretsResync when changes were missed:
	// remembered credentials then need no TTL, and a credential changed
	// or deleted by any path is refused on the next request.
	Invalidated bool
}

// Validate reports the first problem with c.
func (c Config) Validate() error {
	switch {
	case c.Store == nil:
		return errors.New("auth: config: Store is required")
	case !isLowerHex(c.CAHash, caHashLen):
		return fmt.Errorf("auth: config: CAHash must be %d lowercase hex digits", caHashLen)
	case c.AdminToken != "" && !validAdminToken(c.AdminToken):
		return fmt.Errorf("auth: config: AdminToken must be at least %d printable characters without spaces", minAdminTokenLen)
	case c.CacheTTL < 0:
		return errors.New("auth: config: CacheTTL must not be negative")
	}
	return nil
}

func validAdminToken(s string) bool {
	if len(s) < minAdminTokenLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] >= 0x7f {
			return false
		}
	}
	return true
}

// Tokens issues and checks join tokens, exchanges them for node
// credentials, and authenticates bearer tokens. The server's handlers call
// it; it speaks no HTTP. It is safe for concurrent use. Create it with
// NewTokens.
type Tokens struct {
	store     SecretStore
	caHash    string
	adminHash [sha256.Size]byte
	hasAdmin  bool
	clk       clock.Clock
	cache     *credCache
	// invalidated: Config.Invalidated.
	invalidated bool
	// storeReads counts Authenticate's store reads (StoreReads).
	storeReads atomic.Uint64
}

// NewTokens validates cfg, applies its defaults and returns a Tokens.
func NewTokens(cfg Config) (*Tokens, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.CacheSize == 0 {
		cfg.CacheSize = DefaultCacheSize
	}
	if cfg.CacheTTL == 0 {
		cfg.CacheTTL = DefaultCacheTTL
	}
	t := &Tokens{
		store:       cfg.Store,
		caHash:      cfg.CAHash,
		clk:         clock.Or(cfg.Clock),
		cache:       newCredCache(cfg.CacheSize, cfg.CacheTTL, cfg.Invalidated),
		invalidated: cfg.Invalidated,
	}
	if cfg.AdminToken != "" {
		t.adminHash, t.hasAdmin = sha256.Sum256([]byte(cfg.AdminToken)), true
	}
	return t, nil
}

// JoinTokenInfo describes a stored join token, without its secret, for
// `skiff token list`.
type JoinTokenInfo struct {
	ID          string
	Description string
	// Expires is when the token stops working; zero means never.
	Expires time.Time
	// Usage is what the token may be used for; always "join" today.
	Usage string
	// Created is the Secret's creation time as the store recorded it.
	Created time.Time
}

// CreateJoinToken makes and stores a join token valid for ttl from now, or
// forever when ttl is 0, and returns it; the secret is shown to the caller
// once and then exists only as its hash.
func (t *Tokens) CreateJoinToken(ctx context.Context, ttl time.Duration, description string) (JoinToken, error) {
	if ttl < 0 {
		return JoinToken{}, fmt.Errorf("auth: create join token: negative ttl %v", ttl)
	}
	if len(description) > MaxDescriptionLen {
		return JoinToken{}, fmt.Errorf("auth: create join token: description longer than %d bytes", MaxDescriptionLen)
	}
	var expires time.Time
	if ttl > 0 {
		expires = t.clk.Now().Add(ttl).UTC().Truncate(time.Second)
	}
	// 36^6 ids make a collision rare; retry a few times rather than fail.
	var err error
	for range 3 {
		var jt JoinToken
		if jt, err = NewJoinToken(t.caHash); err != nil {
			return JoinToken{}, err
		}
		rec := joinTokenRecord{id: jt.ID, secretHash: HashSecret(jt.Secret), description: description, expires: expires, usage: usageJoin}
		err = t.store.CreateSecret(ctx, rec.secret())
		if err == nil {
			return jt, nil
		}
		if !api.IsAlreadyExists(err) {
			break
		}
	}
	return JoinToken{}, fmt.Errorf("auth: create join token: %w", err)
}

// ListJoinTokens returns every stored join token, sorted by ID, expired
// ones included. Secrets of another type in SystemNamespace are skipped; a
// join token Secret this package cannot decode is an error naming it.
func (t *Tokens) ListJoinTokens(ctx context.Context) ([]JoinTokenInfo, error) {
	secrets, err := t.store.ListSecrets(ctx, SystemNamespace, SecretTypeJoinToken)
	if err != nil {
		return nil, fmt.Errorf("auth: list join tokens: %w", err)
	}
	var out []JoinTokenInfo
	for _, s := range secrets {
		if s.Type != SecretTypeJoinToken {
			continue
		}
		r, err := decodeJoinToken(s)
		if err != nil {
			return nil, fmt.Errorf("auth: list join tokens: %w", err)
		}
		out = append(out, JoinTokenInfo{ID: r.id, Description: r.description, Expires: r.expires, Usage: r.usage, Created: r.created})
	}
	slices.SortFunc(out, func(a, b JoinTokenInfo) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// DeleteExpiredJoinTokens deletes every join token whose expiry has
// passed (tokens that never expire are kept) and returns how many it
// deleted. The garbage collector calls it periodically; a token deleted
// meanwhile by someone else is not an error.
func (t *Tokens) DeleteExpiredJoinTokens(ctx context.Context) (int, error) {
	secrets, err := t.store.ListSecrets(ctx, SystemNamespace, SecretTypeJoinToken)
	if err != nil {
		return 0, fmt.Errorf("auth: delete expired join tokens: %w", err)
	}
	now := t.clk.Now()
	n := 0
	var errs []error
	for _, s := range secrets {
		if s.Type != SecretTypeJoinToken {
			continue
		}
		r, err := decodeJoinToken(s)
		if err != nil || r.expires.IsZero() || now.Before(r.expires) {
			continue // undecodable ones are left for an operator
		}
		switch err := t.store.DeleteSecret(ctx, SystemNamespace, s.Name); {
		case err == nil:
			n++
		case !api.IsNotFound(err):
			errs = append(errs, fmt.Errorf("auth: delete expired join token %s: %w", r.id, err))
		}
	}
	return n, errors.Join(errs...)
}

// DeleteJoinToken deletes the join token with the given id, or returns an
// error wrapping ErrTokenNotFound. Node credentials already obtained with
// it stay valid. Deleting the default token also needs join.token removed,
// or EnsureDefaultJoinToken restores it on the next start.
func (t *Tokens) DeleteJoinToken(ctx context.Context, id string) error {
	if !validTokenID(id) {
		// Not quoted: users paste whole tokens here.
		return fmt.Errorf("%w: a token id is %d lowercase letters or digits", ErrTokenNotFound, tokenIDLen)
	}
	name := JoinTokenSecretPrefix + id
	s, err := t.store.GetSecret(ctx, SystemNamespace, name)
	if api.IsNotFound(err) {
		return fmt.Errorf("%w: %q", ErrTokenNotFound, id)
	}
	if err != nil {
		return fmt.Errorf("auth: delete join token %q: %w", id, err)
	}
	if s.Type != SecretTypeJoinToken {
		return fmt.Errorf("%w: %q", ErrTokenNotFound, id)
	}
	err = t.store.DeleteSecret(ctx, SystemNamespace, name)
	if api.IsNotFound(err) {
		return fmt.Errorf("%w: %q", ErrTokenNotFound, id)
	}
	if err != nil {
		return fmt.Errorf("auth: delete join token %q: %w", id, err)
	}
	return nil
}

// checkJoinToken finds jt in the store and checks it at now: the CA hash,
// then the secret, then expiry (so expiry is told only to a holder of the
// secret).
func (t *Tokens) checkJoinToken(ctx context.Context, jt JoinToken) error {
	if jt.CAHash != t.caHash {
		return ErrWrongCA
	}
	s, err := t.store.GetSecret(ctx, SystemNamespace, JoinTokenSecretPrefix+jt.ID)
	if api.IsNotFound(err) {
		return ErrInvalidToken
	}
	if err != nil {
		return fmt.Errorf("auth: read join token: %w", err)
	}
	if s.Type != SecretTypeJoinToken {
		return ErrInvalidToken
	}
	r, err := decodeJoinToken(s)
	if err != nil {
		return fmt.Errorf("auth: read join token: %w", err)
	}
	if !hashMatches(r.secretHash, jt.Secret) || r.usage != usageJoin {
		return ErrInvalidToken
	}
	if !r.expires.IsZero() && !t.clk.Now().Before(r.expires) {
		return ErrExpiredToken
	}
	return nil
}

// Join exchanges a join token for the credential of node nodeName (see
// doc.go for its format) and returns it. It fails with ErrInvalidToken,
// ErrWrongCA or ErrExpiredToken (possibly wrapped) for a bad token and
// with ErrInvalidNodeName for a bad name.
//
// A name not yet joined gets a new credential: existingNodeCred when it
// is a well-formed credential for nodeName (the agent proposes one it
// kept before asking, so that when the answer is lost on the way its
// retry re-joins with it rather than being refused), else a fresh one. A
// name already joined succeeds only when existingNodeCred is that node's
// credential, which is then returned unchanged: re-joining is
// idempotent, and there is no rotation whose answer, if lost on the way,
// would lock the node out. A
// second machine with the same name and only the join token gets
// ErrNodeNameTaken; to replace a machine, delete its credential first
// (DeleteNodeCredential). An agent that holds a credential need not call
// Join at all.
func (t *Tokens) Join(ctx context.Context, token, nodeName, existingNodeCred string) (string, error) {
	jt, err := ParseJoinToken(token)
	if err != nil {
		return "", err
	}
	if err := t.checkJoinToken(ctx, jt); err != nil {
		return "", err
	}
	if err := validateNodeName(nodeName); err != nil {
		return "", err
	}
	name := NodeCredentialSecretPrefix + nodeName
	s, err := t.store.GetSecret(ctx, SystemNamespace, name)
	if api.IsNotFound(err) {
		return t.createNodeCredential(ctx, nodeName, existingNodeCred)
	}
	if err != nil {
		return "", fmt.Errorf("auth: join node %q: read credential: %w", nodeName, err)
	}
	stored, err := decodeNodeCredential(s, nodeName)
	if err != nil {
		return "", fmt.Errorf("auth: join node %q: %w", nodeName, err)
	}
	node, secret, ok := parseNodeCredential(existingNodeCred)
	if !ok || node != nodeName || !hashMatches(stored, secret) {
		return "", ErrNodeNameTaken
	}
	return existingNodeCred, nil
}

// createNodeCredential stores nodeName's credential: proposed when it is
// a well-formed credential for that name, else a new one.
func (t *Tokens) createNodeCredential(ctx context.Context, nodeName, proposed string) (string, error) {
	cred, secret := proposed, ""
	if node, s, ok := parseNodeCredential(proposed); ok && node == nodeName {
		secret = s
	} else {
		var err error
		if cred, secret, err = newNodeCredential(nodeName); err != nil {
			return "", err
		}
	}
	gen := t.cache.generation(nodeName)
	hash := HashSecret(secret)
	err := t.store.CreateSecret(ctx, nodeCredentialSecret(nodeName, hash))
	if api.IsAlreadyExists(err) {
		// Joined a moment ago: by this agent's earlier attempt (the
		// same proposed credential), or by another machine.
		if s, gerr := t.store.GetSecret(ctx, SystemNamespace, NodeCredentialSecretPrefix+nodeName); gerr == nil {
			if stored, derr := decodeNodeCredential(s, nodeName); derr == nil && proposed != "" && hashMatches(stored, secret) {
				return cred, nil
			}
		}
		return "", ErrNodeNameTaken
	}
	if err != nil {
		return "", fmt.Errorf("auth: join node %q: store credential: %w", nodeName, err)
	}
	if t.invalidated {
		// The new node's first request need not read the store: the
		// store's hook forgot nodeName once, for this very creation;
		// a change since (a deletion) forgot it again and put refuses.
		t.cache.put(nodeName, hash, t.clk.Now(), gen+1)
	} else {
		// A credential deleted out of band may still be cached.
		t.cache.forget(nodeName)
	}
	return cred, nil
}

// DeleteNodeCredential deletes nodeName's credential, so the node can no
// longer authenticate and its name can join afresh. From the moment it
// returns, Authenticate refuses the old credential. A missing credential
// is an error satisfying api.IsNotFound.
func (t *Tokens) DeleteNodeCredential(ctx context.Context, nodeName string) error {
	if err := validateNodeName(nodeName); err != nil {
		return err
	}
	err := t.store.DeleteSecret(ctx, SystemNamespace, NodeCredentialSecretPrefix+nodeName)
	// Forget even on failure: the cache must not outlive a deletion that
	// happened some other way.
	t.cache.forget(nodeName)
	if err != nil {
		return fmt.Errorf("auth: delete node credential %q: %w", nodeName, err)
	}
	return nil
}

// InvalidateNode drops anything cached about nodeName's credential. The
// server calls it when it sees a node credential Secret change or go away
// other than through Tokens (an admin editing skiff-system through the
// API); without it such a change takes effect within Config.CacheTTL.
func (t *Tokens) InvalidateNode(nodeName string) { t.cache.forget(nodeName) }

// SecretChanged tells Tokens that the Secret namespace/name changed: a
// node credential's change forgets what is cached about that node (see
// Config.Invalidated).
func (t *Tokens) SecretChanged(namespace, name string) {
	if namespace == SystemNamespace {
		if node, ok := strings.CutPrefix(name, NodeCredentialSecretPrefix); ok {
			t.cache.forget(node)
		}
	}
}

// Warm caches every node credential in the store, read with one list, so
// that a restarted server does not read and decode each node's Secret on
// that node's first request while the whole fleet reconnects (9 % of a
// restarted server's CPU with 10,000 agents). A credential changed while
// the list runs is not cached: the generations taken before the list
// refuse it, as they refuse a lookup that raced with a change. It returns
// how many credentials it cached: none when the cache is off.
func (t *Tokens) Warm(ctx context.Context) (int, error) {
	if t.cache.size <= 0 {
		return 0, nil
	}
	gens := t.cache.generations()
	secrets, err := t.store.ListSecrets(ctx, SystemNamespace, SecretTypeNodeCredential)
	if err != nil {
		return 0, fmt.Errorf("auth: warm the credential cache: %w", err)
	}
	now := t.clk.Now()
	n := 0
	for _, s := range secrets {
		node, ok := strings.CutPrefix(s.Name, NodeCredentialSecretPrefix)
		if !ok {
			continue
		}
		stored, err := decodeNodeCredential(s, node)
		if err != nil {
			continue // damaged: Authenticate reads it and says so
		}
		if t.cache.put(node, stored, now, gens[genBucket(node)]) {
			n++
		}
	}
	return n, nil
}

// SecretsResync drops every cached credential: Secret changes may have
// been missed.
func (t *Tokens) SecretsResync() { t.cache.reset() }
