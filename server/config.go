package server

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/skiffhq/skiff/api/labels"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/server/encryption"
	"github.com/skiffhq/skiff/server/events"
	"github.com/skiffhq/skiff/server/servicealloc"
	"github.com/skiffhq/skiff/storage"
)

// Defaults of Config, as SPEC.md fixes them for `skiff server`.
const (
	DefaultDataDir            = "/var/lib/skiff"
	DefaultListen             = "0.0.0.0:7443"
	DefaultClusterCIDR        = "10.42.0.0/16"
	DefaultServiceCIDR        = servicealloc.DefaultServiceCIDR
	DefaultNodePortRange      = servicealloc.DefaultNodePortRange
	DefaultClusterDNS         = "10.43.0.10"
	DefaultClusterDomain      = "cluster.local"
	DefaultNodeMonitorGrace   = 40 * time.Second
	DefaultPodEvictionTimeout = 60 * time.Second
	// DefaultEventTTL is kube-apiserver's default --event-ttl.
	DefaultEventTTL = events.DefaultTTL
	// DefaultShutdownTimeout bounds a graceful shutdown.
	DefaultShutdownTimeout = 10 * time.Second
)

// File names under <data-dir>/server/.
const (
	serverDirName    = "server"
	tlsDirName       = "tls"
	stateDBName      = "state.db"
	adminTokenName   = "admin.token"
	joinTokenName    = "join.token"
	clientConfigName = "skiff.yaml"
	kubeconfigName   = "kubeconfig.yaml"
	// serviceAccountKeyName signs service account tokens (0600).
	serviceAccountKeyName = "serviceaccount.key"
	sqliteScheme          = "sqlite://"
	maxClusterCIDRBits    = 24 // one /24 per node
)

// Config is what Run needs. Build it in cmd from flags, check it with
// Validate; zero fields take the defaults above.
type Config struct {
	// DataDir holds the server's state under DataDir/server/. Default
	// DefaultDataDir.
	DataDir string
	// Listen is the host:port of the HTTPS listener. Default
	// DefaultListen; port 0 picks a free port (tests).
	Listen string
	// Datastore names the store: sqlite://<path>, or
	// postgres://user[:password]@host:port/db?sslmode=... shared by any
	// number of servers (one leads; see package leader). Default
	// sqlite://<DataDir>/server/state.db.
	Datastore string
	// TLSSANs are extra names and addresses for the server certificate
	// (--tls-san), besides the host name, interface addresses and
	// loopback.
	TLSSANs []string
	// ClusterCIDR is the pod network, one /24 per node. Default
	// DefaultClusterCIDR. It is validated and kept for the node IPAM
	// controller, which does not exist yet.
	ClusterCIDR string
	// ServiceCIDR is where Service cluster IPs come from (--service-cidr),
	// NodePortRange where node ports come from
	// (--service-node-port-range). Defaults DefaultServiceCIDR and
	// DefaultNodePortRange.
	ServiceCIDR   string
	NodePortRange string
	// ClusterDNS is the cluster IP of the DNS Service (kube-system/kube-dns,
	// served by every agent), inside ServiceCIDR; ClusterDomain the DNS
	// suffix of Services. Defaults DefaultClusterDNS, DefaultClusterDomain.
	ClusterDNS    string
	ClusterDomain string
	// NodeMonitorGrace is how long a node may go without a heartbeat
	// before the node lifecycle controller marks it unreachable;
	// PodEvictionTimeout how long its pods then stay before they are
	// evicted. Defaults DefaultNodeMonitorGrace and
	// DefaultPodEvictionTimeout.
	NodeMonitorGrace   time.Duration
	PodEvictionTimeout time.Duration
	// EventTTL is how long an Event lives after it was last seen
	// (kube-apiserver's --event-ttl). Default events.DefaultTTL (1 h); at
	// least a minute. Events are most of what a churning cluster stores:
	// the database holds about one TTL of them.
	EventTTL time.Duration
	// SchedulerScoring is the scheduler's resource scoring: LeastAllocated
	// (spread, the default) or MostAllocated (bin-packing, for fleets that
	// consolidate to save power).
	SchedulerScoring string
	// DisableScheduler runs no scheduler: pods stay unbound unless a
	// client sets spec.nodeName (k3s's --disable-scheduler).
	DisableScheduler bool
	// DisableControllers runs no controllers (node lifecycle, Deployment,
	// DaemonSet, garbage collection): for tests that need a quiet server.
	// Expired events are still deleted.
	DisableControllers bool
	// DisableAgent turns off the local agent. The agent does not exist
	// yet, so today no local agent runs either way; Run logs so.
	DisableAgent bool
	// ShutdownTimeout bounds the graceful shutdown when ctx ends. Default
	// DefaultShutdownTimeout.
	ShutdownTimeout time.Duration

	// BodyReadTimeout bounds how long a request's body may take to
	// arrive (DefaultBodyReadTimeout); MaxConnsPerClient caps the open
	// connections of one address (DefaultMaxConnsPerClient);
	// MaxRequestsInFlight caps the requests served at once, watches and
	// streams excepted (DefaultMaxRequestsInFlight). Negative turns a
	// limit off.
	// AuditLog is the audit log's path (--audit-log): JSON lines of every
	// write and every refused request. Default <data-dir>/server/audit.log;
	// AuditLogOff ("off") turns it off. AuditMaxBytes is the size at which
	// it is rotated (DefaultAuditMaxBytes).
	AuditLog string
	// EncryptionKeyFile is the key ring that encrypts Secrets at rest
	// (--encryption-key-file; default <data-dir>/server/encryption.key).
	// On SQLite it is created when missing. On PostgreSQL every server
	// must be given the same file: the first server creates it, and the
	// datastore keeps only a check of the key, so a server with a missing
	// or different key refuses to start.
	EncryptionKeyFile string
	AuditMaxBytes     int64

	BodyReadTimeout     time.Duration
	MaxConnsPerClient   int
	MaxRequestsInFlight int
	// limitLoopbackConns applies MaxConnsPerClient to loopback clients
	// too, which are otherwise exempt (tests, all on 127.0.0.1, set it).
	limitLoopbackConns bool

	// GCBurst raises the collector's GOGC while the store writes in bulk
	// (a placement) and restores it after; zero Percent: off, GOGC is
	// left as the process set it.
	GCBurst GCBurst

	// Clock drives token expiry, rate limits, certificate renewal and the
	// store's background loops. Default the wall clock.
	Clock clock.Clock
	// Logger receives the request log and server events. Default: discard.
	Logger *slog.Logger
	// Ready, if set, is called once from Run's goroutine when the server
	// accepts connections, with where to find it.
	Ready func(Info)
}

// Info tells a caller of Run where the running server is.
type Info struct {
	// Addr is the address the listener is bound to.
	Addr net.Addr
	// URL is the base URL written to the client configs:
	// https://127.0.0.1:<port> unless Listen names a specific address.
	URL string
	// AdminTokenPath, JoinTokenPath, ClientConfigPath and KubeconfigPath
	// are the files Run wrote or reused under <data-dir>/server/.
	AdminTokenPath   string
	JoinTokenPath    string
	ClientConfigPath string
	KubeconfigPath   string
	// CAPath is tls/ca.crt.
	CAPath string
}

// Validate reports every problem with c; zero fields are valid.
func (c Config) Validate() error {
	var errs []error
	if c.Listen != "" {
		if _, _, err := splitListen(c.Listen); err != nil {
			errs = append(errs, err)
		}
	}
	if c.Datastore != "" {
		if _, err := storage.ParseDatastore(c.Datastore); err != nil {
			errs = append(errs, err)
		}
	}
	if c.ClusterCIDR != "" {
		p, err := netip.ParsePrefix(c.ClusterCIDR)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("cluster CIDR: %w", err))
		case !p.Addr().Is4() || p.Bits() > maxClusterCIDRBits:
			errs = append(errs, fmt.Errorf("cluster CIDR %s: want an IPv4 prefix of /%d or larger", c.ClusterCIDR, maxClusterCIDRBits))
		}
	}
	if _, err := servicealloc.New(servicealloc.Config{ServiceCIDR: c.ServiceCIDR, NodePortRange: c.NodePortRange}); err != nil {
		errs = append(errs, err)
	}
	if c.ClusterDNS != "" {
		if _, err := netip.ParseAddr(c.ClusterDNS); err != nil {
			errs = append(errs, fmt.Errorf("cluster DNS: %w", err))
		}
	}
	if c.ClusterDomain != "" && len(labels.IsDNS1123Subdomain(c.ClusterDomain)) > 0 {
		errs = append(errs, fmt.Errorf("cluster domain %q: want a DNS name such as cluster.local", c.ClusterDomain))
	}
	for _, san := range c.TLSSANs {
		if strings.TrimSpace(san) == "" {
			errs = append(errs, errors.New("tls SAN: empty name"))
		}
	}
	if c.NodeMonitorGrace < 0 || c.PodEvictionTimeout < 0 || c.ShutdownTimeout < 0 {
		errs = append(errs, errors.New("node monitor grace, pod eviction timeout and shutdown timeout must not be negative"))
	}
	if c.EventTTL != 0 && c.EventTTL < time.Minute {
		errs = append(errs, fmt.Errorf("event TTL %s: must be at least 1m", c.EventTTL))
	}
	if len(errs) > 0 {
		return fmt.Errorf("server config: %w", errors.Join(errs...))
	}
	return nil
}

// withDefaults returns c with zero fields set to their defaults.
func (c Config) withDefaults() Config {
	if c.DataDir == "" {
		c.DataDir = DefaultDataDir
	}
	if c.Listen == "" {
		c.Listen = DefaultListen
	}
	if c.Datastore == "" {
		c.Datastore = sqliteScheme + filepath.Join(c.serverDir(), stateDBName)
	}
	if c.ClusterCIDR == "" {
		c.ClusterCIDR = DefaultClusterCIDR
	}
	if c.ServiceCIDR == "" {
		c.ServiceCIDR = DefaultServiceCIDR
	}
	if c.NodePortRange == "" {
		c.NodePortRange = DefaultNodePortRange
	}
	if c.ClusterDNS == "" {
		c.ClusterDNS = DefaultClusterDNS
	}
	if c.ClusterDomain == "" {
		c.ClusterDomain = DefaultClusterDomain
	}
	if c.NodeMonitorGrace == 0 {
		c.NodeMonitorGrace = DefaultNodeMonitorGrace
	}
	if c.PodEvictionTimeout == 0 {
		c.PodEvictionTimeout = DefaultPodEvictionTimeout
	}
	if c.EventTTL == 0 {
		c.EventTTL = DefaultEventTTL
	}
	if c.ShutdownTimeout == 0 {
		c.ShutdownTimeout = DefaultShutdownTimeout
	}
	if c.AuditLog == "" {
		c.AuditLog = c.path(auditLogName)
	}
	if c.EncryptionKeyFile == "" {
		c.EncryptionKeyFile = c.path(encryption.FileName)
	}
	if c.AuditMaxBytes <= 0 {
		c.AuditMaxBytes = DefaultAuditMaxBytes
	}
	if c.BodyReadTimeout == 0 {
		c.BodyReadTimeout = DefaultBodyReadTimeout
	}
	if c.MaxConnsPerClient == 0 {
		c.MaxConnsPerClient = DefaultMaxConnsPerClient
	}
	if c.MaxRequestsInFlight == 0 {
		c.MaxRequestsInFlight = DefaultMaxRequestsInFlight
	}
	c.Clock = clock.Or(c.Clock)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

func (c Config) serverDir() string { return filepath.Join(c.DataDir, serverDirName) }
func (c Config) path(name string) string {
	return filepath.Join(c.serverDir(), name)
}

// splitListen checks a host:port listen address.
func splitListen(addr string) (host string, port int, err error) {
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("listen address %q: %w", addr, err)
	}
	n, err := strconv.Atoi(p)
	if err != nil || n < 0 || n > 65535 {
		return "", 0, fmt.Errorf("listen address %q: bad port", addr)
	}
	return h, n, nil
}

// clientURL returns the URL clients on this machine use for a listener
// bound to addr: loopback unless it is bound to one specific address.
func clientURL(listenHost string, addr net.Addr) string {
	port := "7443"
	if ta, ok := addr.(*net.TCPAddr); ok {
		port = strconv.Itoa(ta.Port)
	}
	host := "127.0.0.1"
	if ip, err := netip.ParseAddr(listenHost); err == nil && !ip.IsUnspecified() && !ip.IsLoopback() {
		host = ip.String()
	} else if err != nil && listenHost != "" && listenHost != "localhost" {
		host = listenHost // a DNS name
	}
	return "https://" + net.JoinHostPort(host, port)
}
