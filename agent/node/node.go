package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/client"
	"github.com/skiffhq/skiff/internal/backoff"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/internal/version"
)

// Well-known node labels the agent sets.
const (
	LabelHostname = "kubernetes.io/hostname"
	LabelOS       = "kubernetes.io/os"
	LabelArch     = "kubernetes.io/arch"
	// AnnotationAgentCert is the sha256 (hex) of the agent's serving
	// certificate; the server pins it when it proxies logs.
	AnnotationAgentCert = "skiff.io/agent-cert-sha256"
)

// Defaults.
const (
	DefaultHeartbeat = 10 * time.Second
	// imagesEvery is how often the node's image list is refreshed.
	imagesEvery = time.Minute
	// minSyncTimeout is the least time one heartbeat may take.
	minSyncTimeout = 5 * time.Second
	// maxReportedImages bounds status.images, as the kubelet does (50).
	maxReportedImages = 50
)

// API is what the registrar needs of the server; *client.Client has it.
type API interface {
	Get(ctx context.Context, res api.ResourceInfo, ns, name string) (api.Object, error)
	Create(ctx context.Context, obj api.Object) (api.Object, error)
	Update(ctx context.Context, obj api.Object) (api.Object, error)
	UpdateStatus(ctx context.Context, obj api.Object) (api.Object, error)
	PatchStatus(ctx context.Context, res api.ResourceInfo, ns, name, patchType string, body []byte) (api.Object, error)
	Patch(ctx context.Context, res api.ResourceInfo, ns, name, patchType string, body []byte) (api.Object, error)
	Do(ctx context.Context, method, path string, body io.Reader) (*http.Response, error)
}

// Runtime is what the registrar needs of the container runtime.
type Runtime interface {
	Version(ctx context.Context) (string, error)
	Status(ctx context.Context) error
}

// ImageLister lists the images present, for status.images.
type ImageLister func(ctx context.Context) ([]api.ContainerImage, error)

// Config configures a Registrar.
type Config struct {
	API            API
	NodeName       string
	Labels         map[string]string
	SystemReserved api.ResourceList
	MaxPods        int
	// Info reads the machine's facts; ReadSystemInfo in production.
	Info    func(ctx context.Context) (SystemInfo, error)
	Runtime Runtime
	Images  ImageLister // may be nil
	// AgentPort and AgentCertSHA256 advertise the agent's HTTPS port.
	AgentPort       int
	AgentCertSHA256 string
	// Conditions adds conditions (MemoryPressure, ...) from the eviction
	// manager; may be nil.
	Conditions func() []api.NodeCondition
	// Taints returns the taints the agent wants on its Node among the
	// keys TaintKeys owns (the eviction manager's pressure taints); the
	// registrar adds and removes those, leaving other taints alone. May be
	// nil.
	Taints    func() []api.Taint
	TaintKeys []string
	// NetworkReady reports pod network health; nil means ready.
	NetworkReady func() error
	Heartbeat    time.Duration // 0 means DefaultHeartbeat
	// Recovered, when set, is called after a sync works following failed
	// ones the server did not answer (a refused connection, a timeout;
	// not a 429), or after the server asked for the conditions (it had
	// marked the node unreachable): the server is heard from again after
	// a silence, so streams that may have died silently should resync.
	// silentSince is when the silence began: the start of the first
	// unanswered sync, or, when the server asked, of the last sync that
	// worked before. A stream opened since missed nothing.
	Recovered func(silentSince time.Time)
	Clock     clock.Clock
	Logger    *slog.Logger
}

// Registrar registers the agent's Node and keeps its status fresh: a
// heartbeat every Heartbeat (a strategic merge patch of the conditions,
// which the server stores only when something besides the heartbeat time
// changed), the full status at start and whenever facts change.
type Registrar struct {
	cfg Config
	clk clock.Clock
	log *slog.Logger

	mu         sync.Mutex
	registered bool
	info       SystemInfo
	transition map[string]transition // condition type → last status and when it changed
	images     []api.ContainerImage
	imagesAt   time.Time
	runtimeVer string
	// the taints last written (signature), valid when taintsApplied
	appliedTaints string
	taintsApplied bool

	trigger chan struct{}
	// lightOK is whether the server answers the lightweight heartbeat;
	// sentSig and sentAt are what the last full status write said, when.
	lightOK bool
	// asked is whether the server answered a heartbeat 205 since the
	// last sync (Run tells Recovered).
	asked   bool
	sentSig string
	sentAt  time.Time
	// heardAt is when the server last took another call it counts as a
	// heartbeat (a usage report: Heard); wanted is whether it asked for
	// the conditions in answer to one (StatusWanted). beatDue is when the
	// beat skipped by the last sync is due (zero: none skipped).
	heardAt time.Time
	wanted  bool
	beatDue time.Time
	// reportDue is when the next such call is due (ReportDue).
	reportDue time.Time
}

type transition struct {
	status string
	at     time.Time
}

// NewRegistrar returns a Registrar for cfg.
func NewRegistrar(cfg Config) *Registrar {
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = DefaultHeartbeat
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Registrar{cfg: cfg, clk: clock.Or(cfg.Clock), log: cfg.Logger, transition: map[string]transition{}, trigger: make(chan struct{}, 1), lightOK: true}
}

// Trigger asks Run for a sync now rather than at the next heartbeat (the
// eviction manager calls it when a pressure condition changes). It never
// blocks.
func (r *Registrar) Trigger() {
	select {
	case r.trigger <- struct{}{}:
	default:
	}
}

// Heard tells the registrar that the server took, at at, another call
// of the agent's that it counts as a heartbeat: a usage report. While
// such calls keep coming, the lightweight beat is sent only when none
// came for most of a heartbeat period, so a fleet's server is not told
// twice in 15 s that an agent is alive. It never blocks.
func (r *Registrar) Heard(at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if at.After(r.heardAt) {
		r.heardAt = at
	}
}

// ReportDue tells the registrar when the agent's next usage report is
// due. The server counts a report as a heartbeat, so a beat that would go
// out within a quarter heartbeat of it (before it, or after it while its
// call is in flight) is skipped: the report is the beat. With reports
// every two heartbeats the agent makes one call a heartbeat period (with
// reports every 15 s it made four in three). Should the report not be
// heard, the beat follows a quarter heartbeat after it was due.
func (r *Registrar) ReportDue(at time.Time) {
	r.mu.Lock()
	r.reportDue = at
	r.mu.Unlock()
}

// StatusWanted tells the registrar that the server answered another
// call 205: it marked the node unreachable and wants the conditions
// again. The next sync, at once, sends them in full.
func (r *Registrar) StatusWanted() {
	r.mu.Lock()
	r.wanted = true
	r.mu.Unlock()
	r.Trigger()
}

// Registered reports whether the Node has been registered since start.
func (r *Registrar) Registered() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.registered
}

// Run registers the node (retrying while the server is away) and then
// heartbeats until ctx ends, when it returns ctx's error. Failed syncs are
// retried with capped, jittered backoff (from a second up to Heartbeat);
// the first sync that works returns to the heartbeat, give or take a
// tenth at random. A Trigger cuts any wait short.
func (r *Registrar) Run(ctx context.Context) error {
	bo := backoff.Backoff{Min: min(time.Second, r.cfg.Heartbeat), Max: r.cfg.Heartbeat, Clock: r.clk}
	// unheard is whether a sync since the last that worked got no answer
	// from the server (a refused or reset connection, a timeout): only
	// that is a silence after which the streams resync (Recovered).
	unheard := false
	// silentSince is when the first unanswered sync of the silence
	// began, lastOK when the last sync that worked did.
	var silentSince, lastOK time.Time
	for {
		wait := jittered(r.cfg.Heartbeat)
		// One sync may take at most a heartbeat (5 s at least): a call
		// stuck on a link that went silent must not hold the next
		// heartbeat back for the client's whole timeout.
		began := r.clk.Now()
		sctx, cancel := context.WithTimeout(ctx, max(r.cfg.Heartbeat, minSyncTimeout))
		err := r.SyncOnce(sctx)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			r.log.Warn("node status", "node", r.cfg.NodeName, "err", err, "failures", bo.Failures()+1)
			wait = bo.Next()
			if !unheard && !answered(err) {
				silentSince = began
			}
			unheard = unheard || !answered(err)
			// While the server did not hear from us it may have marked
			// the node unreachable (Ready=Unknown). The next sync is
			// still the lightweight beat: the server answers it 205 if
			// so, and the full conditions follow at once. After a short
			// outage (a server restart) nothing was marked, and a fleet
			// coming back sends beats the server answers from memory
			// rather than a status write per node all at once.
		} else {
			r.mu.Lock()
			recovered, since := unheard || r.asked, silentSince
			if !unheard {
				since = lastOK
			}
			unheard, lastOK = false, began
			r.asked = false
			if due := r.beatDue; !due.IsZero() {
				// The beat was skipped: the next is a heartbeat after
				// what the server heard instead.
				// Bounded both ways: never a hot loop, never
				// longer than a jittered heartbeat.
				wait = min(max(due.Sub(r.clk.Now()), r.cfg.Heartbeat/10), r.cfg.Heartbeat+r.cfg.Heartbeat/10)
				r.beatDue = time.Time{}
			}
			r.mu.Unlock()
			if recovered && r.cfg.Recovered != nil {
				r.cfg.Recovered(since)
			}
			bo.Reset()
		}
		t := r.clk.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C():
		case <-r.trigger:
			t.Stop()
		}
	}
}

// answered reports whether err is the server's answer (an HTTP status:
// 429 from a busy server, 504, 500), which a call on a connection that
// went silent never gets. A fleet's agents answered 429 by a server
// busy after its restart took it for a silence, and each listed its
// pods again: more load on the server that had just refused theirs.
func answered(err error) bool {
	var se *api.StatusError
	return errors.As(err, &se)
}

// jittered is d give or take a tenth, at random, so that agents started
// together (a fleet after a server restart) spread their heartbeats out
// instead of arriving in step.
func jittered(d time.Duration) time.Duration {
	if d < 10 {
		return d
	}
	return d - d/10 + rand.N(d/5)
}

// SyncOnce registers the node if it has not been yet, else sends one
// heartbeat.
func (r *Registrar) SyncOnce(ctx context.Context) error {
	if !r.Registered() {
		if err := r.register(ctx); err != nil {
			return err
		}
	} else if err := r.heartbeat(ctx); err != nil {
		return err
	}
	return r.syncTaints(ctx)
}

// register creates the Node, or updates the one there (labels, status).
func (r *Registrar) register(ctx context.Context) error {
	info, err := r.cfg.Info(ctx)
	if err != nil {
		return fmt.Errorf("read system info: %w", err)
	}
	rv := ""
	if r.cfg.Runtime != nil {
		if v, err := r.cfg.Runtime.Version(ctx); err == nil {
			rv = v
		}
	}
	r.mu.Lock()
	r.info, r.runtimeVer = info, rv
	r.mu.Unlock()
	r.refreshImages(ctx, true)

	nodes, _ := api.LookupResource("nodes")
	want := r.desiredNode(ctx)
	_, err = r.cfg.API.Get(ctx, nodes, "", r.cfg.NodeName)
	switch {
	case api.IsNotFound(err):
		created, err := r.cfg.API.Create(ctx, want)
		if err != nil {
			return fmt.Errorf("register node: %w", err)
		}
		want.ResourceVersion = created.GetObjectMeta().ResourceVersion
	case err != nil:
		return fmt.Errorf("register node: %w", err)
	default:
		// Patches, not read-modify-write: the server writes the Node too
		// (its podCIDR, taints), and a merge keeps what it wrote.
		meta, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": want.Labels, "annotations": want.Annotations}})
		if err != nil {
			return err
		}
		if _, err := r.cfg.API.Patch(ctx, nodes, "", r.cfg.NodeName, "application/merge-patch+json", meta); err != nil {
			return fmt.Errorf("update node: %w", err)
		}
	}
	body, err := statusPatch(want.Status)
	if err != nil {
		return err
	}
	if _, err := r.cfg.API.PatchStatus(ctx, nodes, "", r.cfg.NodeName, "application/strategic-merge-patch+json", body); err != nil {
		return fmt.Errorf("node status: %w", err)
	}
	r.mu.Lock()
	r.sentSig, r.sentAt = conditionsSignature(want.Status.Conditions), r.clk.Now()
	r.mu.Unlock()
	r.mu.Lock()
	r.registered = true
	r.taintsApplied = false // a new or re-read Node: check its taints
	r.mu.Unlock()
	r.log.Info("node registered", "node", r.cfg.NodeName, "cpus", info.CPUs, "memory", info.MemoryBytes)
	return nil
}

// heartbeat patches the conditions (and images, when they changed).
func (r *Registrar) heartbeat(ctx context.Context) error {
	conds := r.conditions(ctx)
	imgs, imagesChanged := r.refreshImages(ctx, false)
	sig := conditionsSignature(conds)
	now := r.clk.Now()
	r.mu.Lock()
	light := r.lightOK && !imagesChanged && sig == r.sentSig && now.Sub(r.sentAt) < statusSnapshot
	heard := false // the server heard a report just now and asked for the conditions
	if r.wanted {
		// Asked for in answer to a usage report: as a beat's 205.
		light, r.asked, r.wanted, heard = false, true, false, true
	}
	if light && !r.heardAt.IsZero() && now.Sub(r.heardAt) < r.cfg.Heartbeat*9/10 {
		// The server heard from the agent moments ago and counted it as
		// a heartbeat: the next beat is due a heartbeat after that.
		r.beatDue = r.heardAt.Add(jittered(r.cfg.Heartbeat))
		r.mu.Unlock()
		return nil
	}
	if until := r.reportDue.Sub(now); light && until >= -r.cfg.Heartbeat/4 && until <= r.cfg.Heartbeat/4 {
		// A report the server counts as a heartbeat goes out in a
		// moment, or went out just now and is not heard of yet (its
		// call is in flight): it is the beat (ReportDue).
		r.beatDue = r.reportDue.Add(r.cfg.Heartbeat / 4)
		r.mu.Unlock()
		return nil
	}
	beat := r.lightOK && !heard
	r.mu.Unlock()
	probing := false
	if beat {
		// The lightweight call, with no body for the server to decode or
		// store: alone when there is nothing to report but being alive,
		// and before a full write too (changed conditions or images, the
		// periodic snapshot). A server shedding load refuses the full
		// write (429) while it serves beats from a reserve: the beat
		// first keeps the node alive to it, where a full write retried
		// alone left 10,000 simulated nodes silent for a minute, marked
		// unreachable, and their pods evicted.
		err := r.beat(ctx)
		switch {
		case errors.Is(err, errStatusWanted):
			// Fall through to the full write.
			r.mu.Lock()
			r.asked = true
			r.mu.Unlock()
		case err == nil && !light:
			// Heard; the full write follows.
		case err == nil || !errors.Is(err, errNotFound):
			return err
		default:
			// Either the Node is gone or the server has no such call:
			// the full write below tells which.
			probing = true
		}
	}
	patch := map[string]any{"conditions": conds}
	if imagesChanged {
		patch["images"] = imgs
	}
	body, err := json.Marshal(map[string]any{"status": patch})
	if err != nil {
		return err
	}
	nodes, _ := api.LookupResource("nodes")
	_, err = r.cfg.API.PatchStatus(ctx, nodes, "", r.cfg.NodeName, "application/strategic-merge-patch+json", body)
	if api.IsNotFound(err) {
		// Someone deleted the Node: register it again.
		r.mu.Lock()
		r.registered = false
		r.mu.Unlock()
	}
	if err == nil {
		r.mu.Lock()
		r.sentSig, r.sentAt = sig, now
		if probing {
			// The Node exists, so the lightweight call is missing (an
			// older server): send the conditions every time.
			r.lightOK = false
		}
		r.mu.Unlock()
	}
	return err
}

// statusPatch is the strategic merge patch that sets st. Addresses merge
// by type, so two InternalIPs would collapse into one: that list is
// replaced whole instead.
func statusPatch(st api.NodeStatus) ([]byte, error) {
	b, err := json.Marshal(st)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	if addrs, ok := m["addresses"].([]any); ok {
		m["addresses"] = append(addrs, map[string]any{"$patch": "replace"})
	}
	return json.Marshal(map[string]any{"status": m})
}

// statusSnapshot is how often the full conditions are sent even when
// nothing changed, so the stored lastHeartbeatTime stays within minutes.
const statusSnapshot = 5 * time.Minute

// heartbeatPath is the server's lightweight heartbeat call for a node.
func heartbeatPath(node string) string {
	return "/api/v1/skiff/nodes/" + url.PathEscape(node) + "/heartbeat"
}

// errNotFound is a 404 to the lightweight heartbeat: the Node is gone, or
// the server (an older one) has no such call.
var errNotFound = errors.New("heartbeat: not found")

// beat sends the lightweight heartbeat.
func (r *Registrar) beat(ctx context.Context) error {
	resp, err := r.cfg.API.Do(ctx, http.MethodPost, heartbeatPath(r.cfg.NodeName), nil)
	if err != nil {
		if api.IsNotFound(err) || api.ReasonOf(err) == api.StatusReasonMethodNotAllowed {
			return fmt.Errorf("%w: %w", errNotFound, err)
		}
		return err
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusResetContent {
		return errStatusWanted
	}
	return nil
}

// errStatusWanted is the lightweight heartbeat answered 205: the server
// marked the node unreachable while it could not hear it (its Ready
// condition says Unknown), so the full conditions must be sent again.
var errStatusWanted = errors.New("heartbeat: the server wants the node's conditions")

// conditionsSignature identifies what the conditions say, ignoring the
// heartbeat times.
func conditionsSignature(conds []api.NodeCondition) string {
	var b strings.Builder
	for _, c := range conds {
		b.WriteString(c.Type + "=" + c.Status + "/" + c.Reason + "/" + c.Message + ";")
	}
	return b.String()
}

// refreshImages re-lists images when due (or when force), and reports
// whether the list changed.
func (r *Registrar) refreshImages(ctx context.Context, force bool) ([]api.ContainerImage, bool) {
	if r.cfg.Images == nil {
		return nil, false
	}
	now := r.clk.Now()
	r.mu.Lock()
	due := force || now.Sub(r.imagesAt) >= imagesEvery
	r.mu.Unlock()
	if !due {
		return nil, false
	}
	imgs, err := r.cfg.Images(ctx)
	if err != nil {
		r.log.Warn("list images", "err", err)
		return nil, false
	}
	if len(imgs) > maxReportedImages {
		imgs = imgs[:maxReportedImages]
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.imagesAt = now
	changed := !equalImages(r.images, imgs)
	r.images = imgs
	return imgs, changed
}

func equalImages(a, b []api.ContainerImage) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].SizeBytes != b[i].SizeBytes || len(a[i].Names) != len(b[i].Names) {
			return false
		}
		for j := range a[i].Names {
			if a[i].Names[j] != b[i].Names[j] {
				return false
			}
		}
	}
	return true
}

// desiredNode is the Node as the agent describes it.
func (r *Registrar) desiredNode(ctx context.Context) *api.Node {
	r.mu.Lock()
	info, rv, imgs := r.info, r.runtimeVer, r.images
	r.mu.Unlock()
	labels := map[string]string{
		LabelHostname: r.cfg.NodeName,
		LabelOS:       info.OS,
		LabelArch:     info.Arch,
	}
	for k, v := range r.cfg.Labels {
		labels[k] = v
	}
	n := &api.Node{
		TypeMeta:   api.TypeMeta{APIVersion: "v1", Kind: "Node"},
		ObjectMeta: api.ObjectMeta{Name: r.cfg.NodeName, Labels: labels},
	}
	if r.cfg.AgentCertSHA256 != "" {
		n.Annotations = map[string]string{AnnotationAgentCert: r.cfg.AgentCertSHA256}
	}
	capacity := Capacity(info, r.cfg.MaxPods)
	n.Status = api.NodeStatus{
		Capacity:    capacity,
		Allocatable: Allocatable(capacity, r.cfg.SystemReserved),
		Conditions:  r.conditions(ctx),
		Addresses:   addresses(info, r.cfg.NodeName),
		NodeInfo: api.NodeSystemInfo{
			MachineID:               info.MachineID,
			BootID:                  info.BootID,
			KernelVersion:           info.Kernel,
			OSImage:                 info.OSImage,
			ContainerRuntimeVersion: rv,
			KubeletVersion:          "skiff-" + version.Get().Version,
			OperatingSystem:         info.OS,
			Architecture:            info.Arch,
		},
		Images: imgs,
	}
	if r.cfg.AgentPort > 0 {
		n.Status.DaemonEndpoints.KubeletEndpoint.Port = int32(r.cfg.AgentPort)
	}
	return n
}

func addresses(info SystemInfo, nodeName string) []api.NodeAddress {
	out := []api.NodeAddress{{Type: api.NodeHostName, Address: nodeName}}
	for _, ip := range info.IPs {
		out = append(out, api.NodeAddress{Type: api.NodeInternalIP, Address: ip})
	}
	return out
}

// conditions computes the node's conditions now: Ready from the runtime
// and the network, plus the eviction manager's pressure conditions
// (False when it reports none).
func (r *Registrar) conditions(ctx context.Context) []api.NodeCondition {
	now := r.clk.Now()
	ready := api.NodeCondition{Type: api.NodeReady, Status: api.ConditionTrue, Reason: "KubeletReady", Message: "skiff agent is posting ready status"}
	if r.cfg.Runtime != nil {
		if err := r.cfg.Runtime.Status(ctx); err != nil {
			ready.Status, ready.Reason, ready.Message = api.ConditionFalse, "RuntimeUnhealthy", "container runtime is down: "+err.Error()
		}
	}
	if ready.Status == api.ConditionTrue && r.cfg.NetworkReady != nil {
		if err := r.cfg.NetworkReady(); err != nil {
			ready.Status, ready.Reason, ready.Message = api.ConditionFalse, "NetworkNotReady", "pod network is not ready: "+err.Error()
		}
	}
	conds := []api.NodeCondition{ready}
	have := map[string]bool{}
	if r.cfg.Conditions != nil {
		for _, c := range r.cfg.Conditions() {
			have[c.Type] = true
			conds = append(conds, c)
		}
	}
	for _, t := range []string{api.NodeMemoryPressure, api.NodeDiskPressure, api.NodePIDPressure} {
		if !have[t] {
			conds = append(conds, api.NodeCondition{Type: t, Status: api.ConditionFalse, Reason: "KubeletHas" + noPressureReason(t), Message: "no " + t})
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range conds {
		c := &conds[i]
		c.LastHeartbeatTime = api.NewTime(now)
		tr, ok := r.transition[c.Type]
		if !ok || tr.status != c.Status {
			tr = transition{status: c.Status, at: now}
			r.transition[c.Type] = tr
		}
		c.LastTransitionTime = api.NewTime(tr.at)
	}
	return conds
}

func noPressureReason(t string) string {
	switch t {
	case api.NodeMemoryPressure:
		return "SufficientMemory"
	case api.NodeDiskPressure:
		return "NoDiskPressure"
	default:
		return "SufficientPID"
	}
}

// errNoInfo is returned when Config.Info is missing.
var errNoInfo = errors.New("node: Config.Info is required")

// Validate checks cfg.
func (c Config) Validate() error {
	if c.API == nil {
		return errors.New("node: Config.API is required")
	}
	if c.NodeName == "" {
		return errors.New("node: Config.NodeName is required")
	}
	if c.Info == nil {
		return errNoInfo
	}
	return nil
}

var _ API = (*client.Client)(nil)
