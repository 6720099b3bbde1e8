package node

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/client"
	"github.com/skiffhq/skiff/internal/atomicfile"
	"github.com/skiffhq/skiff/internal/backoff"
	"github.com/skiffhq/skiff/internal/clock"
)

// Files under the agent's state directory (<data-dir>/agent/).
const (
	CAFile          = "ca.crt"
	CredentialsFile = "node.json"
	// ProposedFile holds the credential the agent proposes when it joins
	// (0600) until the join succeeds: a retry after a lost answer
	// proposes it again, and the server lets that in.
	ProposedFile = "node.proposed"
)

// Credentials are what a joined agent keeps: the server, the CA it pinned
// and its node credential.
type Credentials struct {
	Server     string `json:"server"`
	NodeName   string `json:"nodeName"`
	Credential string `json:"nodeCredential"`
	CAData     []byte `json:"-"`
}

// String never shows the credential.
func (c Credentials) String() string {
	return fmt.Sprintf("node.Credentials{Server: %s, NodeName: %s}", c.Server, c.NodeName)
}

// ClientConfig is the api/client configuration that authenticates as the
// node.
func (c Credentials) ClientConfig() client.Config {
	return client.Config{Server: c.Server, CAData: c.CAData, Token: c.Credential}
}

// JoinToken is a parsed SKF1.<ca hash>.<id>.<secret> join token, which
// may carry a server list (SKF1.<ca hash>.<id>.<secret>.<servers>, see
// client.SplitJoinToken).
type JoinToken struct {
	CAHash  string   // sha256 hex of ca.crt's PEM
	Raw     string   // the four fields the server checks
	Servers []string // the servers the token lists; nil for none
}

// ParseJoinToken checks a join token's shape. It never echoes the token
// in its errors.
func ParseJoinToken(s string) (JoinToken, error) {
	s, servers, err := client.SplitJoinToken(s)
	if err != nil {
		return JoinToken{}, err
	}
	parts := strings.Split(s, ".")
	if len(parts) != 4 || parts[0] != "SKF1" {
		return JoinToken{}, errors.New("join token: want SKF1.<ca hash>.<id>.<secret>[.<servers>]")
	}
	if len(parts[1]) != 64 {
		return JoinToken{}, errors.New("join token: the CA hash must be 64 hex digits")
	}
	if _, err := hex.DecodeString(parts[1]); err != nil {
		return JoinToken{}, errors.New("join token: the CA hash must be 64 hex digits")
	}
	if parts[2] == "" || parts[3] == "" {
		return JoinToken{}, errors.New("join token: empty id or secret")
	}
	return JoinToken{CAHash: strings.ToLower(parts[1]), Raw: s, Servers: servers}, nil
}

// JoinConfig says how to join.
type JoinConfig struct {
	Server   string // https://host:port
	Token    string // join token; may be "" when credentials are on disk
	NodeName string
	Dir      string // the agent's state directory
	// Timeout bounds each HTTP call; 0 means 15 s.
	Timeout time.Duration
	// DialContext, when set, opens the connections to the server (the
	// agent's own, the fleet simulator's from a source address per node).
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)
}

// LoadCredentials reads the credentials kept in dir, if any. A missing
// file is (Credentials{}, false, nil).
func LoadCredentials(dir string) (Credentials, bool, error) {
	b, err := os.ReadFile(filepath.Join(dir, CredentialsFile))
	if errors.Is(err, os.ErrNotExist) {
		return Credentials{}, false, nil
	}
	if err != nil {
		return Credentials{}, false, err
	}
	var c Credentials
	if err := json.Unmarshal(b, &c); err != nil {
		return Credentials{}, false, fmt.Errorf("%s: %w", filepath.Join(dir, CredentialsFile), err)
	}
	if c.CAData, err = os.ReadFile(filepath.Join(dir, CAFile)); err != nil {
		return Credentials{}, false, err
	}
	if c.Server == "" || c.NodeName == "" || c.Credential == "" {
		return Credentials{}, false, fmt.Errorf("%s: incomplete credentials", filepath.Join(dir, CredentialsFile))
	}
	return c, true, nil
}

// saveCredentials writes c under dir: ca.crt (0644) and node.json (0600).
func saveCredentials(dir string, c Credentials) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if err := atomicfile.Replace(filepath.Join(dir, CAFile), c.CAData, 0o644); err != nil {
		return err
	}
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Replace(filepath.Join(dir, CredentialsFile), append(b, '\n'), 0o600)
}

// Join returns the node's credentials: those kept in cfg.Dir when they
// are for the same server and node name, else it joins. Joining fetches
// /cacerts without verification, checks its hash against the token,
// then exchanges the token at POST /api/v1/join over TLS verified
// against that CA; a name joined before re-joins with its own
// credential. The result is kept in cfg.Dir.
func Join(ctx context.Context, cfg JoinConfig) (Credentials, error) {
	// Server may list several servers sharing one datastore; the list is
	// kept in node.json and the agent's client fails over between them.
	// A join token may list more servers: they follow --server's.
	flagServers := client.Servers(cfg.Server)
	var jt JoinToken
	var err error
	if cfg.Token != "" {
		if jt, err = ParseJoinToken(cfg.Token); err != nil {
			return Credentials{}, err
		}
	}
	servers := client.MergeServers(flagServers, jt.Servers)
	server := strings.Join(servers, ",")
	old, ok, err := LoadCredentials(cfg.Dir)
	if err != nil {
		return Credentials{}, err
	}
	if ok && old.NodeName == cfg.NodeName && subset(flagServers, client.Servers(old.Server)) {
		// Joined before through these servers (the kept list may hold
		// more, from the token): keep the credential, and add any server
		// a token given now lists.
		kept := client.Servers(old.Server)
		if more := client.MergeServers(kept, jt.Servers); len(more) > len(kept) {
			old.Server = strings.Join(more, ",")
			if err := saveCredentials(cfg.Dir, old); err != nil {
				return Credentials{}, fmt.Errorf("join: keep credentials: %w", err)
			}
		}
		return old, nil
	}
	if cfg.Token == "" {
		return Credentials{}, errors.New("join: no credentials kept for this server and node name, and no --token given")
	}
	timeout := cfg.Timeout
	if timeout == 0 {
		timeout = 15 * time.Second
	}
	body := map[string]string{"token": jt.Raw, "nodeName": cfg.NodeName}
	if ok && old.NodeName == cfg.NodeName {
		body["nodeCredential"] = old.Credential
	} else {
		p, err := proposedCredential(cfg.Dir, cfg.NodeName)
		if err != nil {
			return Credentials{}, fmt.Errorf("join: %w", err)
		}
		body["nodeCredential"] = p
	}
	// Every server presents the one cluster CA; the first that answers
	// does the join.
	var errs []error
	for _, one := range servers {
		ca, cred, err := joinOne(ctx, one, jt, body, timeout, cfg.DialContext)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		c := Credentials{Server: server, NodeName: cfg.NodeName, Credential: cred, CAData: ca}
		if err := saveCredentials(cfg.Dir, c); err != nil {
			return Credentials{}, fmt.Errorf("join: keep credentials: %w", err)
		}
		if err := os.Remove(filepath.Join(cfg.Dir, ProposedFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return Credentials{}, fmt.Errorf("join: %w", err)
		}
		return c, nil
	}
	return Credentials{}, errors.Join(errs...)
}

// proposedCredential returns the credential this agent proposes for
// node: the one kept in dir, else a new SKN1.<node>.<64 hex> kept there
// (0600) before it is ever sent.
func proposedCredential(dir, node string) (string, error) {
	prefix := "SKN1." + node + "."
	b, err := os.ReadFile(filepath.Join(dir, ProposedFile))
	if err == nil {
		if c := strings.TrimSpace(string(b)); strings.HasPrefix(c, prefix) && len(c) == len(prefix)+64 {
			return c, nil
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return "", err
	}
	c := prefix + hex.EncodeToString(secret)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	if err := atomicfile.Replace(filepath.Join(dir, ProposedFile), []byte(c+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("keep the proposed credential: %w", err)
	}
	return c, nil
}

// dialFunc opens a connection (net.Dialer.DialContext's shape).
type dialFunc = func(ctx context.Context, network, addr string) (net.Conn, error)

// joinOne joins through one server: it fetches and checks the CA, then
// exchanges the token for the node credential.
func joinOne(ctx context.Context, server string, jt JoinToken, body map[string]string, timeout time.Duration, dial dialFunc) (ca []byte, cred string, err error) {
	ca, err = fetchCA(ctx, server, jt.CAHash, timeout, dial)
	if err != nil {
		return nil, "", err
	}
	c, err := client.New(client.Config{Server: server, CAData: ca, Timeout: timeout, DialContext: dial})
	if err != nil {
		return nil, "", err
	}
	defer c.CloseIdleConnections()
	var resp struct {
		NodeCredential string `json:"nodeCredential"`
	}
	if err := c.DoJSON(ctx, http.MethodPost, "/api/v1/join", body, &resp); err != nil {
		return nil, "", fmt.Errorf("join %s as %s: %w", server, body["nodeName"], err)
	}
	if resp.NodeCredential == "" {
		return nil, "", fmt.Errorf("join %s: the server answered no credential", server)
	}
	return ca, resp.NodeCredential, nil
}

// fetchCA gets /cacerts without verifying the server (it cannot yet) and
// accepts it only if its sha256 is the token's.
func fetchCA(ctx context.Context, server, wantHash string, timeout time.Duration, dial dialFunc) ([]byte, error) {
	tr := &http.Transport{DialContext: dial, TLSClientConfig: &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}} //nolint:gosec
	defer tr.CloseIdleConnections()
	hc := &http.Client{
		Timeout: timeout,
		// The answer is checked against the hash below; nothing secret
		// is sent on this connection.
		Transport:     tr,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, server+"/cacerts", nil)
	if err != nil {
		return nil, fmt.Errorf("join: %w", err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("join: fetch CA: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("join: fetch CA: %s answered %s", server, resp.Status)
	}
	ca, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("join: fetch CA: %w", err)
	}
	sum := sha256.Sum256(ca)
	if hex.EncodeToString(sum[:]) != wantHash {
		return nil, fmt.Errorf("join: the CA %s serves does not match the join token's hash (wrong server, or someone in between)", server)
	}
	if !bytes.Contains(ca, []byte("BEGIN CERTIFICATE")) {
		return nil, errors.New("join: /cacerts is not a PEM certificate")
	}
	return ca, nil
}

// subset reports whether every one of a is in b.
func subset(a, b []string) bool {
	for _, s := range a {
		if !slices.Contains(b, s) {
			return false
		}
	}
	return true
}

// JoinRetry is Join retried with capped, jittered back-off (1 s to 30 s
// on clk) while the server is away or refuses, so a token fixed on the
// server side works without a restart; it fails only when ctx ends. The
// agent and the fleet simulator join through it.
func JoinRetry(ctx context.Context, cfg JoinConfig, clk clock.Clock, log *slog.Logger) (Credentials, error) {
	bo := backoff.Backoff{Min: time.Second, Max: 30 * time.Second, Clock: clock.Or(clk)}
	for {
		cred, err := Join(ctx, cfg)
		if err == nil {
			return cred, nil
		}
		if ctx.Err() != nil {
			return Credentials{}, ctx.Err()
		}
		if api.IsForbidden(err) || api.ReasonOf(err) == api.StatusReasonUnauthorized || api.ReasonOf(err) == api.StatusReasonInvalid {
			log.Error("join refused; fix the token or node name (retrying)", "err", err, "failures", bo.Failures()+1)
		} else {
			log.Warn("join: server not reachable yet, retrying", "err", err, "failures", bo.Failures()+1)
		}
		if !bo.BackOff(ctx, err) {
			return Credentials{}, ctx.Err()
		}
	}
}
