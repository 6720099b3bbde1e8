package apiserver

import (
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync"

	"github.com/skiffhq/skiff/api"
)

// This file serves OpenAPI v3 the way kubectl 1.32 reads it:
// GET /openapi/v3 lists one document per group version, and
// GET /openapi/v3/api/v1?hash=… (or apis/apps/v1) returns it. kubectl
// explain reads the schemas; kubectl apply reads the PATCH operations (to
// learn that strategic merge patch and fieldValidation are supported) and
// the x-kubernetes-patch-* extensions. OpenAPI v2 is not served: kubectl
// 1.32 only falls back to it when v3 is missing.

// openAPIPrefix is where the documents are served.
const openAPIPrefix = "/openapi/v3"

// openAPI holds the documents, generated on first use and then kept.
type openAPI struct {
	resources []api.ResourceInfo
	once      sync.Once
	err       error
	root      document
	byPath    map[string]document // "api/v1" → its document
}

func newOpenAPI(resources []api.ResourceInfo) *openAPI {
	return &openAPI{resources: resources}
}

// load generates the documents once.
func (o *openAPI) load() error {
	o.once.Do(func() { o.err = o.generate() })
	return o.err
}

func (o *openAPI) generate() error {
	type gv struct{ group, version string }
	var order []gv
	byGV := map[gv][]*api.ResourceInfo{}
	for i := range o.resources {
		r := &o.resources[i]
		k := gv{r.Group, r.Version}
		if byGV[k] == nil {
			order = append(order, k)
		}
		byGV[k] = append(byGV[k], r)
	}
	o.byPath = map[string]document{}
	rootPaths := map[string]any{}
	for _, k := range order {
		path := "api/" + k.version
		if k.group != "" {
			path = "apis/" + k.group + "/" + k.version
		}
		doc, err := newDocument("application/json", groupVersionSpec(byGV[k], openAPIDocs()))
		if err != nil {
			return fmt.Errorf("render openapi %s: %w", path, err)
		}
		o.byPath[path] = doc
		rootPaths[path] = map[string]string{"serverRelativeURL": openAPIPrefix + "/" + path + "?hash=" + doc.hash()}
	}
	root, err := newDocument("application/json", map[string]any{"paths": rootPaths})
	if err != nil {
		return fmt.Errorf("render openapi root: %w", err)
	}
	o.root = root
	return nil
}

// hash is the document's ETag without quotes, for ?hash= URLs.
func (d document) hash() string { return strings.Trim(d.etag, `"`) }

// ServeOpenAPI answers GET /openapi/v3 and /openapi/v3/{path}. A document
// asked for with its current ?hash= is immutable and may be cached for a
// year; a stale hash is redirected to the current one, as Kubernetes does.
func (s *Server) ServeOpenAPI(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		s.methodNotAllowed(w, r)
		return
	}
	if err := s.openapi.load(); err != nil {
		s.writeError(w, r, err, nil, "")
		return
	}
	p := strings.TrimSuffix(r.URL.Path, "/")
	if p == openAPIPrefix {
		w.Header().Set("Cache-Control", "no-cache, private")
		s.openapi.root.serve(w, r)
		return
	}
	doc, ok := s.openapi.byPath[strings.TrimPrefix(p, openAPIPrefix+"/")]
	if !ok || !strings.HasPrefix(p, openAPIPrefix+"/") {
		writeStatus(w, api.NewStatusError(http.StatusNotFound, api.StatusReasonNotFound, "the server could not find the requested resource"))
		return
	}
	switch h := r.URL.Query().Get("hash"); h {
	case "":
		w.Header().Set("Cache-Control", "no-cache, private")
	case doc.hash():
		w.Header().Set("Cache-Control", "public, immutable, max-age=31536000")
	default:
		w.Header().Set("Cache-Control", "no-cache, private")
		http.Redirect(w, r, p+"?hash="+doc.hash(), http.StatusMovedPermanently)
		return
	}
	doc.serve(w, r)
}

// groupVersionSpec returns the OpenAPI document of one group version: a
// schema per kind and list kind, and the paths of its resources.
func groupVersionSpec(resources []*api.ResourceInfo, docs map[string]string) map[string]any {
	b := newSchemaBuilder(docs)
	paths := map[string]any{}
	for _, res := range resources {
		t := reflect.TypeOf(res.New()).Elem()
		name := b.component(t)
		b.components[name]["x-kubernetes-group-version-kind"] = []map[string]string{{"group": res.Group, "version": res.Version, "kind": res.Kind}}
		listName := listSchema(b, res, name)
		addPaths(paths, res, name, listName)
	}
	b.components[patchName] = schema{"type": "object", "description": "Patch is the body of a PATCH request: a JSON patch, a JSON merge patch or a strategic merge patch."}
	b.component(reflect.TypeFor[api.Status]())
	b.components[deleteOptsName] = schema{"type": "object", "description": "DeleteOptions may be provided when deleting an API object.",
		"properties": schema{
			"apiVersion":         schema{"type": "string"},
			"kind":               schema{"type": "string"},
			"gracePeriodSeconds": schema{"type": "integer", "format": "int64"},
			"propagationPolicy":  schema{"type": "string"},
			"dryRun":             schema{"type": "array", "items": schema{"type": "string"}},
			"preconditions": schema{"type": "object", "properties": schema{
				"uid": schema{"type": "string"}, "resourceVersion": schema{"type": "string"},
			}},
		}}
	return map[string]any{
		"openapi":    "3.0.0",
		"info":       map[string]string{"title": "skiff", "version": "v1"},
		"paths":      paths,
		"components": map[string]any{"schemas": b.components},
	}
}

// listSchema adds the XxxList schema of res and returns its name.
func listSchema(b *schemaBuilder, res *api.ResourceInfo, itemName string) string {
	name := strings.TrimSuffix(itemName, res.Kind) + res.ListKind()
	b.components[name] = schema{
		"type":        "object",
		"description": res.ListKind() + " is a list of " + res.Kind + " objects.",
		"required":    []string{"items"},
		"properties": schema{
			"apiVersion": schema{"type": "string"},
			"kind":       schema{"type": "string"},
			"metadata":   refTo(b.component(reflect.TypeFor[api.ListMeta]())),
			"items":      schema{"type": "array", "items": refTo(itemName)},
		},
		"x-kubernetes-group-version-kind": []map[string]string{{"group": res.Group, "version": res.Version, "kind": res.ListKind()}},
	}
	return name
}

// addPaths adds the collection and item paths of res with the operations
// skiff serves on them.
func addPaths(paths map[string]any, res *api.ResourceInfo, name, listName string) {
	base := "/api/" + res.Version
	if res.Group != "" {
		base = "/apis/" + res.Group + "/" + res.Version
	}
	gvk := map[string]string{"group": res.Group, "version": res.Version, "kind": res.Kind}
	var params []schema
	if res.Namespaced {
		base += "/namespaces/{namespace}"
		params = append(params, pathParam("namespace"))
	}
	collection := base + "/" + res.Resource
	item := collection + "/{name}"
	op := func(action, verb string, extra []schema, body bool, out string, code string) schema {
		o := schema{
			"operationId":                     action + res.Kind,
			"x-kubernetes-action":             verb,
			"x-kubernetes-group-version-kind": gvk,
			"responses": schema{code: schema{"description": "OK", "content": schema{
				"application/json": schema{"schema": refTo(out)},
			}}},
		}
		if len(extra) > 0 {
			o["parameters"] = extra
		}
		if body {
			o["requestBody"] = schema{"required": true, "content": schema{
				"application/json": schema{"schema": refTo(name)},
				"application/yaml": schema{"schema": refTo(name)},
			}}
		}
		return o
	}
	writeParams := []schema{queryParam("dryRun"), queryParam("fieldManager"), queryParam("fieldValidation")}
	listParams := []schema{queryParam("labelSelector"), queryParam("fieldSelector"), queryParam("resourceVersion"), queryParam("watch"), queryParam("allowWatchBookmarks")}
	patch := op("patch", "patch", writeParams, false, name, "200")
	patch["requestBody"] = schema{"required": true, "content": schema{
		"application/json-patch+json":            schema{"schema": refTo(patchName)},
		"application/merge-patch+json":           schema{"schema": refTo(patchName)},
		"application/strategic-merge-patch+json": schema{"schema": refTo(patchName)},
	}}
	del := op("delete", "delete", []schema{queryParam("gracePeriodSeconds"), queryParam("dryRun")}, false, name, "200")
	del["requestBody"] = schema{"content": schema{"application/json": schema{"schema": refTo(deleteOptsName)}}}
	paths[collection] = schema{
		"parameters": params,
		"get":        op("list", "list", listParams, false, listName, "200"),
		"post":       op("create", "post", writeParams, true, name, "201"),
	}
	paths[item] = schema{
		"parameters": append(append([]schema{}, params...), pathParam("name")),
		"get":        op("read", "get", nil, false, name, "200"),
		"put":        op("replace", "put", writeParams, true, name, "200"),
		"patch":      patch,
		"delete":     del,
	}
}

func pathParam(name string) schema {
	return schema{"name": name, "in": "path", "required": true, "schema": schema{"type": "string"}}
}

func queryParam(name string) schema {
	return schema{"name": name, "in": "query", "schema": schema{"type": "string"}}
}
