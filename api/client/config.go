package client

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// DefaultTimeout bounds a non-streaming request when Config.Timeout is zero.
const DefaultTimeout = 30 * time.Second

// The HTTP/2 connection health check: a connection on which nothing has
// arrived for h2PingAfter is pinged, and closed if the ping is not
// answered within h2PingTimeout.
const (
	h2PingAfter   = 15 * time.Second
	h2PingTimeout = 5 * time.Second
)

// hpackEncoderTableSize bounds the HPACK table this client compresses its
// request headers with, and so the table the server keeps for each
// client connection (HTTP/2's default is 4 KiB, and a server holds one
// for every agent for as long as it is connected). 1 KiB still holds what
// an agent repeats (the bearer token, the user agent and its few paths),
// so a heartbeat's headers stay a few bytes. The bound applies from the
// first request on a connection (net/http announces it with a table size
// update), unlike a server's smaller decoder table, which net/http
// applies before the client has read it (server.hpackEncoderTableSize).
const hpackEncoderTableSize = 1024

// Config says how to reach one skiff server. The zero value is not usable;
// fill it by hand or with LoadConfig, and check it with Validate.
type Config struct {
	// Server is the base URL, "https://host:port" (a path prefix is
	// kept), or several, comma-separated, of servers sharing one
	// datastore: the client uses one at a time and moves to the next
	// when a request fails to reach it or it answers 503.
	Server string
	// CAData is the PEM of the CA(s) the server certificate must chain to.
	// It is the only trust root: system roots are not consulted.
	CAData []byte
	// Token is the bearer token sent on every request; "" sends none.
	Token string
	// Timeout bounds each request whose answer the client reads whole
	// (Get, List, Create, ..., DoJSON). Zero means DefaultTimeout. Streams
	// (Watch, Logs) and Do are bounded only by their ctx.
	Timeout time.Duration
	// DialContext, when set, opens the TCP connections (tests dial from
	// inside a network namespace); nil means a net.Dialer.
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)
}

// Validate reports the first problem that would stop New from using c.
func (c Config) Validate() error {
	if len(Servers(c.Server)) == 0 {
		return errors.New("client config: server is required")
	}
	for _, server := range Servers(c.Server) {
		u, err := url.Parse(server)
		if err != nil {
			return fmt.Errorf("client config: server: %w", err)
		}
		if u.Scheme != "https" || u.Host == "" {
			return fmt.Errorf("client config: server %q must be an https:// URL with a host", server)
		}
		if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
			return fmt.Errorf("client config: server %q must not carry a query, fragment or user info", server)
		}
	}
	if len(c.CAData) == 0 {
		return errors.New("client config: certificate-authority-data is required (skiff pins the cluster CA)")
	}
	if _, err := parseCAs(c.CAData); err != nil {
		return fmt.Errorf("client config: %w", err)
	}
	if c.Timeout < 0 {
		return fmt.Errorf("client config: timeout %v must not be negative", c.Timeout)
	}
	if strings.ContainsAny(c.Token, "\r\n") {
		return errors.New("client config: token must be a single line")
	}
	return nil
}

// String describes c without its token, so a Config may be logged.
func (c Config) String() string {
	tok := "<none>"
	if c.Token != "" {
		tok = "<redacted>"
	}
	return fmt.Sprintf("client.Config{Server: %q, CAData: %d bytes, Token: %s, Timeout: %v}", c.Server, len(c.CAData), tok, c.Timeout)
}

// GoString is String, so %#v does not print the token either.
func (c Config) GoString() string { return c.String() }

// parseCAs returns a pool of every certificate in pemData, failing when
// there is none or one does not parse.
func parseCAs(pemData []byte) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	n := 0
	for rest := pemData; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("certificate authority: %w", err)
		}
		pool.AddCert(cert)
		n++
	}
	if n == 0 {
		return nil, errors.New("certificate authority: no PEM certificate found")
	}
	return pool, nil
}

// fileConfig is the on-disk shape of Config; see the package doc.
type fileConfig struct {
	Server                   string `json:"server"`
	CertificateAuthorityData []byte `json:"certificate-authority-data,omitempty"`
	CertificateAuthority     string `json:"certificate-authority,omitempty"`
	Token                    string `json:"token,omitempty"`
	Timeout                  string `json:"timeout,omitempty"`
}

// LoadConfig reads the client config file at path (format in the package
// doc) and validates it. A relative certificate-authority path is taken
// relative to the file's directory.
func LoadConfig(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("read client config: %w", err)
	}
	cfg, err := parseConfig(data, filepath.Dir(path))
	if err != nil {
		return Config{}, fmt.Errorf("client config %s: %w", path, err)
	}
	return cfg, nil
}

func parseConfig(data []byte, dir string) (Config, error) {
	var fc fileConfig
	if err := yaml.UnmarshalStrict(data, &fc); err != nil {
		return Config{}, fmt.Errorf("parse: %w", err)
	}
	cfg := Config{Server: strings.TrimRight(fc.Server, "/"), Token: fc.Token, CAData: fc.CertificateAuthorityData}
	switch {
	case len(fc.CertificateAuthorityData) > 0 && fc.CertificateAuthority != "":
		return Config{}, errors.New("set only one of certificate-authority-data and certificate-authority")
	case fc.CertificateAuthority != "":
		p := fc.CertificateAuthority
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		ca, err := os.ReadFile(p)
		if err != nil {
			return Config{}, fmt.Errorf("read certificate-authority: %w", err)
		}
		cfg.CAData = ca
	}
	if fc.Timeout != "" {
		d, err := time.ParseDuration(fc.Timeout)
		if err != nil {
			return Config{}, fmt.Errorf("timeout: %w", err)
		}
		cfg.Timeout = d
	}
	if err := cfg.Validate(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// unchanged reports whether path already holds exactly data with mode perm.
func unchanged(path string, data []byte, perm os.FileMode) bool {
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != perm || fi.Size() != int64(len(data)) {
		return false
	}
	cur, err := os.ReadFile(path)
	return err == nil && bytes.Equal(cur, data)
}

// WriteConfig writes cfg to path in the format LoadConfig reads, with the CA
// inline, with mode 0600, atomically (a temporary file in the same
// directory renamed over path), and only when path does not already hold
// exactly that. It creates the directory (0700) if needed.
// The server calls it on start to hand the CLI its admin credentials.
func WriteConfig(path string, cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	fc := fileConfig{Server: cfg.Server, CertificateAuthorityData: cfg.CAData, Token: cfg.Token}
	if cfg.Timeout != 0 {
		fc.Timeout = cfg.Timeout.String()
	}
	data, err := yaml.Marshal(fc)
	if err != nil {
		return fmt.Errorf("encode client config: %w", err)
	}
	if unchanged(path, data, 0o600) {
		// Nothing to write: a server starting on a full disk must not
		// fail here.
		return nil
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("write client config: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".skiff-config-*")
	if err != nil {
		return fmt.Errorf("write client config: %w", err)
	}
	defer os.Remove(tmp.Name()) // no-op once renamed
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("write client config: %w", err)
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write client config: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("write client config: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write client config: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write client config: %w", err)
	}
	return nil
}

// Default client config locations, in the order ResolveConfigPath tries
// them after the flag and the environment.
const (
	// EnvConfig names the environment variable holding a config path.
	EnvConfig = "SKIFF_CONFIG"
	// UserConfigPath is the per-user config, relative to the home directory.
	UserConfigPath = ".skiff/config.yaml"
	// ServerConfigPath is what a server with the default --data-dir writes.
	ServerConfigPath = "/var/lib/skiff/server/skiff.yaml"
	// DevConfigPath is what `make run` writes, relative to the working
	// directory.
	DevConfigPath = ".skiff/server/skiff.yaml"
)

// ResolveConfigPath returns the client config files to try, best first.
// An explicit choice is exclusive: a non-empty flagValue (--client-config)
// yields only itself, and otherwise a non-empty $SKIFF_CONFIG yields only
// itself, so a mistyped path fails instead of silently falling back to
// other credentials. With neither, it yields ~/.skiff/config.yaml (when
// home is not ""), /var/lib/skiff/server/skiff.yaml and
// ./.skiff/server/skiff.yaml; the first that exists wins (LoadFirstConfig).
func ResolveConfigPath(flagValue string, getenv func(string) string, home string) []string {
	if flagValue != "" {
		return []string{flagValue}
	}
	if getenv != nil {
		if p := getenv(EnvConfig); p != "" {
			return []string{p}
		}
	}
	var paths []string
	if home != "" {
		paths = append(paths, filepath.Join(home, UserConfigPath))
	}
	return append(paths, ServerConfigPath, DevConfigPath)
}

// ErrNoConfig is returned (wrapped) by LoadFirstConfig when none of the
// candidate files exists.
var ErrNoConfig = errors.New("no client config found")

// LoadFirstConfig loads the first of paths that exists and returns it with
// its path. Missing files are skipped; a file that exists but cannot be
// read for lack of permission is skipped too when a later one loads (a
// root-owned /var/lib/skiff must not hide ./.skiff for `make run`), and is
// reported otherwise. A file that is read but invalid is an error at once.
func LoadFirstConfig(paths []string) (Config, string, error) {
	var denied error
	for _, p := range paths {
		data, err := os.ReadFile(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case errors.Is(err, fs.ErrPermission):
			if denied == nil {
				denied = fmt.Errorf("read client config: %w", err)
			}
			continue
		case err != nil:
			return Config{}, "", fmt.Errorf("read client config: %w", err)
		}
		cfg, err := parseConfig(data, filepath.Dir(p))
		if err != nil {
			return Config{}, "", fmt.Errorf("client config %s: %w", p, err)
		}
		return cfg, p, nil
	}
	if denied != nil {
		return Config{}, "", denied
	}
	return Config{}, "", fmt.Errorf("%w (looked in %s; pass --client-config or set %s)", ErrNoConfig, strings.Join(paths, ", "), EnvConfig)
}

// Servers splits a comma-separated server list, trimming blanks and
// trailing slashes.
func Servers(list string) []string {
	var out []string
	for _, s := range strings.Split(list, ",") {
		if s = strings.TrimRight(strings.TrimSpace(s), "/"); s != "" {
			out = append(out, s)
		}
	}
	return out
}
