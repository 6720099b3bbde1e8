package apiserver

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/skiffhq/skiff/api"
)

// This file serves API discovery the way kubectl 1.32 asks for it:
// /api, /apis, /api/v1, /apis/{group} and /apis/{group}/{version}. A
// client that accepts the aggregated form (apidiscovery.k8s.io/v2, or
// v2beta1 for kubectl 1.26–1.29) learns every resource from /api and /apis
// alone, two round trips instead of one per group version; others get the
// classic APIVersions, APIGroupList, APIGroup and APIResourceList.

// Media type parameters of aggregated discovery.
const (
	discoveryGroup   = "apidiscovery.k8s.io"
	discoveryAs      = "APIGroupDiscoveryList"
	discoveryV2      = "v2"
	discoveryV2Beta1 = "v2beta1"
)

// resourceVerbs are the verbs of every resource skiff serves. There is no
// deletecollection: kubectl delete --all lists and deletes one by one.
var resourceVerbs = []string{"create", "delete", "get", "list", "patch", "update", "watch"}

// metricsGroup is metrics.k8s.io, served by the server package from the
// agents' usage reports rather than from the store: read-only, listed in
// discovery beside the stored kinds so kubectl top finds it.
const metricsGroup = "metrics.k8s.io"

var readOnlyVerbs = []string{"get", "list"}

var metricsResources = []api.ResourceInfo{
	{Group: metricsGroup, Version: "v1beta1", Resource: "nodes", Singular: "", Kind: "NodeMetrics"},
	{Group: metricsGroup, Version: "v1beta1", Resource: "pods", Singular: "", Kind: "PodMetrics", Namespaced: true},
}

// groupVersionKind is metav1.GroupVersionKind as discovery writes it.
type groupVersionKind struct {
	Group   string `json:"group"`
	Version string `json:"version"`
	Kind    string `json:"kind"`
}

// subresource is one subresource a resource offers.
type subresource struct {
	name  string
	kind  groupVersionKind
	verbs []string
}

// subresourcesOf lists the subresources ServeResource answers for res.
func subresourcesOf(res *api.ResourceInfo, extra []ExtraSubresource) []subresource {
	self := groupVersionKind{Group: res.Group, Version: res.Version, Kind: res.Kind}
	var out []subresource
	for _, e := range extra {
		if e.Resource == res.Resource {
			out = append(out, subresource{name: e.Name, kind: groupVersionKind{Group: e.Group, Version: e.Version, Kind: e.Kind}, verbs: e.Verbs})
		}
	}
	if hasScale(res.Resource) {
		out = append(out, subresource{name: subScale, kind: groupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}, verbs: []string{"get", "patch", "update"}})
	}
	if res.Resource == "pods" && res.Group == "" {
		out = append(out,
			subresource{name: subEviction, kind: groupVersionKind{Group: "policy", Version: "v1", Kind: "Eviction"}, verbs: []string{"create"}},
			subresource{name: subLog, kind: self, verbs: []string{"get"}},
			subresource{name: subExec, kind: groupVersionKind{Version: "v1", Kind: "PodExecOptions"}, verbs: []string{"create", "get"}},
			subresource{name: subAttach, kind: groupVersionKind{Version: "v1", Kind: "PodAttachOptions"}, verbs: []string{"create", "get"}},
			subresource{name: subPortForward, kind: groupVersionKind{Version: "v1", Kind: "PodPortForwardOptions"}, verbs: []string{"create", "get"}},
			subresource{name: subEphemeralContainers, kind: self, verbs: []string{"get", "patch", "update"}})
	}
	if res.HasStatus {
		out = append(out, subresource{name: subStatus, kind: self, verbs: []string{"get", "patch", "update"}})
	}
	return out
}

// Classic (v1) discovery documents.

type apiResource struct {
	Name         string   `json:"name"`
	SingularName string   `json:"singularName"`
	Namespaced   bool     `json:"namespaced"`
	Group        string   `json:"group,omitempty"`
	Version      string   `json:"version,omitempty"`
	Kind         string   `json:"kind"`
	Verbs        []string `json:"verbs"`
	ShortNames   []string `json:"shortNames,omitempty"`
	Categories   []string `json:"categories,omitempty"`
}

type apiResourceList struct {
	Kind         string        `json:"kind"`
	APIVersion   string        `json:"apiVersion"`
	GroupVersion string        `json:"groupVersion"`
	Resources    []apiResource `json:"resources"`
}

type groupVersionForDiscovery struct {
	GroupVersion string `json:"groupVersion"`
	Version      string `json:"version"`
}

type apiGroup struct {
	Kind             string                     `json:"kind,omitempty"`
	APIVersion       string                     `json:"apiVersion,omitempty"`
	Name             string                     `json:"name"`
	Versions         []groupVersionForDiscovery `json:"versions"`
	PreferredVersion groupVersionForDiscovery   `json:"preferredVersion"`
}

type apiGroupList struct {
	Kind       string     `json:"kind"`
	APIVersion string     `json:"apiVersion"`
	Groups     []apiGroup `json:"groups"`
}

type apiVersions struct {
	Kind       string   `json:"kind"`
	APIVersion string   `json:"apiVersion"`
	Versions   []string `json:"versions"`
}

// Aggregated (apidiscovery.k8s.io/v2) documents.

type apiGroupDiscoveryList struct {
	Kind       string              `json:"kind"`
	APIVersion string              `json:"apiVersion"`
	Metadata   struct{}            `json:"metadata"`
	Items      []apiGroupDiscovery `json:"items"`
}

type apiGroupDiscovery struct {
	Metadata struct {
		Name string `json:"name,omitempty"`
	} `json:"metadata"`
	Versions []apiVersionDiscovery `json:"versions"`
}

type apiVersionDiscovery struct {
	Version   string                 `json:"version"`
	Resources []apiResourceDiscovery `json:"resources"`
	Freshness string                 `json:"freshness"`
}

type apiResourceDiscovery struct {
	Resource         string                    `json:"resource"`
	ResponseKind     groupVersionKind          `json:"responseKind"`
	Scope            string                    `json:"scope"`
	SingularResource string                    `json:"singularResource"`
	Verbs            []string                  `json:"verbs"`
	ShortNames       []string                  `json:"shortNames,omitempty"`
	Categories       []string                  `json:"categories,omitempty"`
	Subresources     []apiSubresourceDiscovery `json:"subresources,omitempty"`
}

type apiSubresourceDiscovery struct {
	Subresource  string           `json:"subresource"`
	ResponseKind groupVersionKind `json:"responseKind"`
	Verbs        []string         `json:"verbs"`
}

// document is a response body rendered once, with its strong ETag and,
// when it is large enough to gain from it, its gzip form: discovery and
// OpenAPI documents cross slow edge uplinks.
type document struct {
	contentType string
	body        []byte
	gzipped     []byte
	etag        string
}

// gzipMinBytes is the smallest body worth compressing.
const gzipMinBytes = 1024

func newDocument(contentType string, v any) (document, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return document{}, err
	}
	b = append(b, '\n')
	sum := sha256.Sum256(b)
	d := document{contentType: contentType, body: b, etag: `"` + hex.EncodeToString(sum[:16]) + `"`}
	if len(b) >= gzipMinBytes {
		var buf bytes.Buffer
		zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		if err != nil {
			return document{}, err
		}
		zw.Write(b)
		if err := zw.Close(); err != nil {
			return document{}, err
		}
		d.gzipped = buf.Bytes()
	}
	return d, nil
}

// serve writes d, or 304 Not Modified when the client already holds it.
func (d document) serve(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("ETag", d.etag)
	if etagMatches(r.Header.Get("If-None-Match"), d.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Type", d.contentType)
	h.Add("Vary", "Accept-Encoding")
	body := d.body
	if d.gzipped != nil && acceptsGzip(r.Header.Get("Accept-Encoding")) {
		h.Set("Content-Encoding", "gzip")
		body = d.gzipped
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write(body)
	}
}

// acceptsGzip reports whether an Accept-Encoding header allows gzip.
func acceptsGzip(header string) bool {
	for _, part := range strings.Split(header, ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(coding), "gzip") {
			return strings.ReplaceAll(strings.TrimSpace(params), " ", "") != "q=0"
		}
	}
	return false
}

// etagMatches reports whether an If-None-Match header names etag.
func etagMatches(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimSpace(t)
		if t == "*" || strings.TrimPrefix(t, "W/") == etag {
			return true
		}
	}
	return false
}

// discovery holds every discovery document, rendered at start: they
// depend only on api.Resources().
type discovery struct {
	// plain maps a path without trailing slash ("/api", "/apis/apps/v1")
	// to its classic document.
	plain map[string]document
	// aggregated maps "/api" and "/apis" to their aggregated document per
	// discovery version ("v2", "v2beta1").
	aggregated map[string]map[string]document
}

// newDiscovery renders the documents for resources. Within a group
// version resources are sorted by name, as Kubernetes lists them; this is
// the order kubectl get all prints them in.
func newDiscovery(resources []api.ResourceInfo, extra []ExtraSubresource, virtual []VirtualResource) (*discovery, error) {
	d := &discovery{plain: map[string]document{}, aggregated: map[string]map[string]document{}}
	verbsOf := map[string][]string{} // by group/resource, for virtual ones
	resources = slices.Clone(resources)
	for _, v := range virtual {
		resources = append(resources, v.Info)
		verbsOf[v.Info.Group+"/"+v.Info.Resource] = v.Verbs
	}
	resources = append(resources, metricsResources...)
	// Groups are listed in registry order (core, apps, then the rest);
	// resources within a group version by name.
	groupRank := map[string]int{}
	for _, r := range resources {
		if _, ok := groupRank[r.GroupVersion()]; !ok {
			groupRank[r.GroupVersion()] = len(groupRank)
		}
	}
	slices.SortStableFunc(resources, func(a, b api.ResourceInfo) int {
		if ga, gb := groupRank[a.GroupVersion()], groupRank[b.GroupVersion()]; ga != gb {
			return ga - gb
		}
		return strings.Compare(a.Resource, b.Resource)
	})
	type gv struct{ group, version string }
	var order []gv
	lists := map[gv]*apiResourceList{}
	aggs := map[gv]*apiVersionDiscovery{}
	for i := range resources {
		res := &resources[i]
		k := gv{res.Group, res.Version}
		if lists[k] == nil {
			order = append(order, k)
			lists[k] = &apiResourceList{Kind: "APIResourceList", APIVersion: "v1", GroupVersion: res.GroupVersion(), Resources: []apiResource{}}
			aggs[k] = &apiVersionDiscovery{Version: res.Version, Freshness: "Current"}
		}
		verbs := resourceVerbs
		if v, ok := verbsOf[res.Group+"/"+res.Resource]; ok {
			verbs = v
		} else if res.Group == metricsGroup {
			verbs = readOnlyVerbs
		}
		lists[k].Resources = append(lists[k].Resources, apiResource{
			Name: res.Resource, SingularName: res.Singular, Namespaced: res.Namespaced, Kind: res.Kind,
			Verbs: verbs, ShortNames: res.ShortNames, Categories: res.Categories,
		})
		scope := "Cluster"
		if res.Namespaced {
			scope = "Namespaced"
		}
		ar := apiResourceDiscovery{
			Resource: res.Resource, ResponseKind: groupVersionKind{Group: res.Group, Version: res.Version, Kind: res.Kind},
			Scope: scope, SingularResource: res.Singular, Verbs: verbs, ShortNames: res.ShortNames, Categories: res.Categories,
		}
		for _, sub := range subresourcesOf(res, extra) {
			ar.Subresources = append(ar.Subresources, apiSubresourceDiscovery{Subresource: sub.name, ResponseKind: sub.kind, Verbs: sub.verbs})
			pr := apiResource{Name: res.Resource + "/" + sub.name, Namespaced: res.Namespaced, Kind: sub.kind.Kind, Verbs: sub.verbs}
			if sub.kind.Group != res.Group || sub.kind.Version != res.Version {
				pr.Group, pr.Version = sub.kind.Group, sub.kind.Version
			}
			lists[k].Resources = append(lists[k].Resources, pr)
		}
		aggs[k].Resources = append(aggs[k].Resources, ar)
	}

	var versions []string
	groupList := apiGroupList{Kind: "APIGroupList", APIVersion: "v1", Groups: []apiGroup{}}
	var coreAgg, groupsAgg []apiGroupDiscovery
	groupIndex := map[string]int{}
	for _, k := range order {
		path := "/apis/" + k.group + "/" + k.version
		if k.group == "" {
			path = "/api/" + k.version
			versions = append(versions, k.version)
			var g apiGroupDiscovery
			g.Versions = []apiVersionDiscovery{*aggs[k]}
			coreAgg = append(coreAgg, g)
		} else {
			gvd := groupVersionForDiscovery{GroupVersion: k.group + "/" + k.version, Version: k.version}
			if i, ok := groupIndex[k.group]; ok {
				groupList.Groups[i].Versions = append(groupList.Groups[i].Versions, gvd)
				groupsAgg[i].Versions = append(groupsAgg[i].Versions, *aggs[k])
			} else {
				groupIndex[k.group] = len(groupList.Groups)
				groupList.Groups = append(groupList.Groups, apiGroup{Name: k.group, Versions: []groupVersionForDiscovery{gvd}, PreferredVersion: gvd})
				var g apiGroupDiscovery
				g.Metadata.Name = k.group
				g.Versions = []apiVersionDiscovery{*aggs[k]}
				groupsAgg = append(groupsAgg, g)
			}
		}
		doc, err := newDocument("application/json", lists[k])
		if err != nil {
			return nil, err
		}
		d.plain[path] = doc
	}
	for _, g := range groupList.Groups {
		g.Kind, g.APIVersion = "APIGroup", "v1"
		doc, err := newDocument("application/json", g)
		if err != nil {
			return nil, err
		}
		d.plain["/apis/"+g.Name] = doc
	}
	var err error
	if d.plain["/api"], err = newDocument("application/json", apiVersions{Kind: "APIVersions", APIVersion: "v1", Versions: versions}); err != nil {
		return nil, err
	}
	if d.plain["/apis"], err = newDocument("application/json", groupList); err != nil {
		return nil, err
	}
	for path, items := range map[string][]apiGroupDiscovery{"/api": coreAgg, "/apis": groupsAgg} {
		d.aggregated[path] = map[string]document{}
		for _, v := range []string{discoveryV2, discoveryV2Beta1} {
			if items == nil {
				items = []apiGroupDiscovery{}
			}
			list := apiGroupDiscoveryList{Kind: discoveryAs, APIVersion: discoveryGroup + "/" + v, Items: items}
			ct := fmt.Sprintf("application/json;g=%s;v=%s;as=%s", discoveryGroup, v, discoveryAs)
			if d.aggregated[path][v], err = newDocument(ct, list); err != nil {
				return nil, err
			}
		}
	}
	return d, nil
}

// isDiscoveryPath reports whether p (without trailing slash) is a
// discovery path: /api, /apis, /api/{v}, /apis/{g} or /apis/{g}/{v}.
func isDiscoveryPath(p string) bool {
	switch {
	case p == "/api" || p == "/apis":
		return true
	case strings.HasPrefix(p, "/api/"):
		return !strings.Contains(p[len("/api/"):], "/")
	case strings.HasPrefix(p, "/apis/"):
		return strings.Count(p[len("/apis/"):], "/") <= 1
	}
	return false
}

// serveDiscovery answers a GET of a discovery path p.
func (s *Server) serveDiscovery(w http.ResponseWriter, r *http.Request, p string) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		s.methodNotAllowed(w, r)
		return
	}
	if p == "/api" || p == "/apis" {
		w.Header().Add("Vary", "Accept")
		if v := aggregatedVersion(r.Header.Get("Accept")); v != "" {
			s.discovery.aggregated[p][v].serve(w, r)
			return
		}
	}
	doc, ok := s.discovery.plain[p]
	if !ok {
		writeStatus(w, api.NewStatusError(http.StatusNotFound, api.StatusReasonNotFound, "the server could not find the requested resource"))
		return
	}
	doc.serve(w, r)
}

// aggregatedVersion returns the aggregated discovery version ("v2",
// "v2beta1") the Accept header asks for first, or "" when the client
// prefers (or only takes) the classic form. Clients list types in order
// of preference, as kubectl does; q-values are not weighed.
func aggregatedVersion(accept string) string {
	for _, part := range strings.Split(accept, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		switch mt {
		case "application/json":
			if params["g"] == "" && params["as"] == "" {
				return ""
			}
			if params["g"] == discoveryGroup && params["as"] == discoveryAs && (params["v"] == discoveryV2 || params["v"] == discoveryV2Beta1) {
				return params["v"]
			}
		case "*/*", "application/*":
			return ""
		}
	}
	return ""
}
