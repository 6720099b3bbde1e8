package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/skiffhq/skiff/api"
)

// ListOptions narrows a List or Watch. Selector syntax is the API's:
// "a=b,c!=d,e in (x,y)" for labels, "spec.nodeName=X" for fields.
type ListOptions struct {
	LabelSelector string
	FieldSelector string
}

func (o ListOptions) query() url.Values {
	q := url.Values{}
	if o.LabelSelector != "" {
		q.Set("labelSelector", o.LabelSelector)
	}
	if o.FieldSelector != "" {
		q.Set("fieldSelector", o.FieldSelector)
	}
	return q
}

// DeleteOptions tunes a Delete. GracePeriodSeconds nil keeps the object's
// own grace period; 0 forces immediate removal.
type DeleteOptions struct {
	GracePeriodSeconds *int64
}

// Patch content types accepted by the API.
const (
	MergePatchType          = "application/merge-patch+json"
	StrategicMergePatchType = "application/strategic-merge-patch+json"
	JSONPatchType           = "application/json-patch+json"
)

// GetRaw returns the JSON of one object as the server sent it. An empty ns
// of a namespaced resource means NamespaceDefault.
func (c *Client) GetRaw(ctx context.Context, res api.ResourceInfo, ns, name string) ([]byte, error) {
	p, err := objectPath(res, ns, name, "")
	if err != nil {
		return nil, err
	}
	return c.do(ctx, request{method: http.MethodGet, path: p})
}

// Get returns one object, decoded into res's Go type (*api.Pod, ...).
func (c *Client) Get(ctx context.Context, res api.ResourceInfo, ns, name string) (api.Object, error) {
	data, err := c.GetRaw(ctx, res, ns, name)
	if err != nil {
		return nil, err
	}
	return decodeObject(res, data, "get "+res.Resource)
}

// List returns the objects of res in ns (NamespaceAll for every namespace)
// that match opts, and the resourceVersion the list was read at, from
// which a Watch can resume.
func (c *Client) List(ctx context.Context, res api.ResourceInfo, ns string, opts ListOptions) ([]api.Object, string, error) {
	if err := checkResource(res); err != nil {
		return nil, "", err
	}
	data, err := c.do(ctx, request{method: http.MethodGet, path: collectionPath(res, ns), query: opts.query()})
	if err != nil {
		return nil, "", err
	}
	var list struct {
		Metadata api.ListMeta      `json:"metadata"`
		Items    []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(data, &list); err != nil {
		return nil, "", fmt.Errorf("list %s: decode response: %w", res.Resource, err)
	}
	objs := make([]api.Object, 0, len(list.Items))
	for _, item := range list.Items {
		obj, err := decodeObject(res, item, "list "+res.Resource)
		if err != nil {
			return nil, "", err
		}
		objs = append(objs, obj)
	}
	return objs, list.Metadata.ResourceVersion, nil
}

// Create posts obj to its collection and returns the object the server
// stored. obj's kind is taken from its Go type; an empty namespace means
// NamespaceDefault. obj itself is not modified.
func (c *Client) Create(ctx context.Context, obj api.Object) (api.Object, error) {
	return c.create(ctx, obj, nil)
}

// create is Create with obj's resourceVersion replaced as encodeObject
// does with rv.
func (c *Client) create(ctx context.Context, obj api.Object, rv *string) (api.Object, error) {
	res, ns, err := resourceOf(obj)
	if err != nil {
		return nil, err
	}
	body, err := encodeObject(obj, rv)
	if err != nil {
		return nil, err
	}
	return c.write(ctx, res, request{method: http.MethodPost, path: collectionPath(res, ns), body: body, contentType: "application/json"})
}

// Update replaces obj (PUT). The server refuses it with a Conflict error
// when obj's resourceVersion is stale. obj itself is not modified.
func (c *Client) Update(ctx context.Context, obj api.Object) (api.Object, error) {
	return c.put(ctx, obj, "", nil)
}

// UpdateStatus replaces obj's status (PUT .../status); the rest of obj is
// ignored by the server. Only kinds with a status subresource accept it.
func (c *Client) UpdateStatus(ctx context.Context, obj api.Object) (api.Object, error) {
	return c.put(ctx, obj, subStatus, nil)
}

// put replaces obj, or its subresource sub, with obj's resourceVersion
// replaced as encodeObject does with rv.
func (c *Client) put(ctx context.Context, obj api.Object, sub string, rv *string) (api.Object, error) {
	res, ns, err := resourceOf(obj)
	if err != nil {
		return nil, err
	}
	if sub == subStatus && !res.HasStatus {
		return nil, fmt.Errorf("%s have no status subresource", res.Resource)
	}
	p, err := objectPath(res, ns, obj.GetObjectMeta().Name, sub)
	if err != nil {
		return nil, err
	}
	body, err := encodeObject(obj, rv)
	if err != nil {
		return nil, err
	}
	return c.write(ctx, res, request{method: http.MethodPut, path: p, body: body, contentType: "application/json"})
}

// Patch applies body, a patch of patchType (MergePatchType, ...), to one
// object and returns the result.
func (c *Client) Patch(ctx context.Context, res api.ResourceInfo, ns, name, patchType string, body []byte) (api.Object, error) {
	return c.patch(ctx, res, ns, name, "", patchType, body)
}

// PatchStatus is Patch on the status subresource; for a Node it counts as
// a heartbeat.
func (c *Client) PatchStatus(ctx context.Context, res api.ResourceInfo, ns, name, patchType string, body []byte) (api.Object, error) {
	if !res.HasStatus {
		return nil, fmt.Errorf("%s have no status subresource", res.Resource)
	}
	return c.patch(ctx, res, ns, name, subStatus, patchType, body)
}

func (c *Client) patch(ctx context.Context, res api.ResourceInfo, ns, name, sub, patchType string, body []byte) (api.Object, error) {
	if patchType == "" {
		return nil, fmt.Errorf("patch %s/%s: a patch type is required", res.Resource, name)
	}
	p, err := objectPath(res, ns, name, sub)
	if err != nil {
		return nil, err
	}
	return c.write(ctx, res, request{method: http.MethodPatch, path: p, body: body, contentType: patchType})
}

// Delete deletes one object. Deletion is graceful unless
// opts.GracePeriodSeconds is 0: a pod lingers with a deletionTimestamp
// until its agent has stopped it.
func (c *Client) Delete(ctx context.Context, res api.ResourceInfo, ns, name string, opts DeleteOptions) error {
	p, err := objectPath(res, ns, name, "")
	if err != nil {
		return err
	}
	r := request{method: http.MethodDelete, path: p}
	if opts.GracePeriodSeconds != nil {
		r.query = url.Values{"gracePeriodSeconds": {strconv.FormatInt(*opts.GracePeriodSeconds, 10)}}
	}
	_, err = c.do(ctx, r)
	return err
}

// write sends a request whose answer is one object of res.
func (c *Client) write(ctx context.Context, res api.ResourceInfo, r request) (api.Object, error) {
	data, err := c.do(ctx, r)
	if err != nil {
		return nil, err
	}
	return decodeObject(res, data, r.String())
}

// decodeObject decodes one object of res leniently (a newer server may add
// fields) and fills its apiVersion and kind.
func decodeObject(res api.ResourceInfo, data []byte, what string) (api.Object, error) {
	obj := res.New()
	if err := api.UnmarshalOwn(data, obj); err != nil {
		return nil, fmt.Errorf("%s: decode %s: %w", what, res.Kind, err)
	}
	api.SetTypeMeta(obj)
	return obj, nil
}

// encodeObject marshals obj with apiVersion and kind filled from its Go
// type when empty, without modifying obj. A nil rv keeps obj's
// metadata.resourceVersion; otherwise *rv replaces it ("" removes it).
func encodeObject(obj api.Object, rv *string) ([]byte, error) {
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("encode %T: %w", obj, err)
	}
	tm := obj.GetTypeMeta()
	if tm.APIVersion != "" && tm.Kind != "" && rv == nil {
		return data, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return nil, fmt.Errorf("encode %T: %w", obj, err)
	}
	if res, ok := api.ResourceOf(obj); ok {
		if tm.APIVersion == "" {
			fields["apiVersion"] = jsonString(res.GroupVersion())
		}
		if tm.Kind == "" {
			fields["kind"] = jsonString(res.Kind)
		}
	}
	if rv != nil {
		meta := map[string]json.RawMessage{}
		if m, ok := fields["metadata"]; ok {
			if err := json.Unmarshal(m, &meta); err != nil {
				return nil, fmt.Errorf("encode %T: %w", obj, err)
			}
		}
		if *rv == "" {
			delete(meta, "resourceVersion")
		} else {
			meta["resourceVersion"] = jsonString(*rv)
		}
		if fields["metadata"], err = json.Marshal(meta); err != nil {
			return nil, fmt.Errorf("encode %T: %w", obj, err)
		}
	}
	out, err := json.Marshal(fields)
	if err != nil {
		return nil, fmt.Errorf("encode %T: %w", obj, err)
	}
	return out, nil
}

// jsonString is s as a JSON string. Marshaling a string cannot fail
// (invalid UTF-8 is replaced), so there is no error to return.
func jsonString(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}
