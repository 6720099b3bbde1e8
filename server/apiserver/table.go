package apiserver

import (
	"cmp"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/table"
)

// Media types the read handlers can answer, for the 406 message.
const acceptedMediaTypes = "application/json, application/json;as=Table;v=v1;g=meta.k8s.io, application/json;as=Table;v=v1beta1;g=meta.k8s.io"

// rendering is how a GET or watch answers: the stored JSON as it is, or
// (when Table is set) a meta.k8s.io Table of apiVersion, whose rows carry
// include (api.IncludeNone, IncludeMetadata or IncludeObject).
type rendering struct {
	table      bool
	apiVersion string
	include    string
}

// negotiate picks the rendering of r from its Accept header, as
// kube-apiserver does for kubectl's
//
//	application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json
//
// Clauses are tried by falling q, then type before wildcards, keeping
// header order otherwise; q=0 refuses a type. No Accept, or a JSON or
// wildcard clause without as=, is plain JSON. When no clause can be met
// it returns a 406 NotAcceptable StatusError; a Table with a bad
// includeObject query parameter is a 400, as in Kubernetes (which
// ignores includeObject for plain JSON).
func negotiate(r *http.Request) (rendering, error) {
	accept := strings.Join(r.Header.Values("Accept"), ",")
	if strings.TrimSpace(accept) == "" {
		return rendering{}, nil
	}
	for _, c := range parseAccept(accept) {
		rd, ok := c.rendering()
		if !ok {
			continue
		}
		if rd.table {
			inc, err := includeObject(r.URL.Query().Get("includeObject"))
			if err != nil {
				return rendering{}, err
			}
			rd.include = inc
		}
		return rd, nil
	}
	return rendering{}, api.NewStatusError(http.StatusNotAcceptable, api.StatusReasonNotAcceptable,
		"only the following media types are accepted: %s", acceptedMediaTypes)
}

// includeObject validates a Table request's includeObject, "" meaning
// the default, Metadata.
func includeObject(v string) (string, error) {
	switch v {
	case "":
		return api.IncludeMetadata, nil
	case api.IncludeNone, api.IncludeMetadata, api.IncludeObject:
		return v, nil
	}
	return "", api.NewBadRequest("Unable to convert to Table as requested: includeObject: Invalid value: %q: must be 'Metadata', 'Object', 'None', or empty", v)
}

// acceptClause is one media range of an Accept header.
type acceptClause struct {
	typ, sub string
	params   map[string]string
	q        float64
}

// parseAccept splits an Accept header into its clauses, dropping those
// that do not parse or have q=0, sorted by preference.
func parseAccept(h string) []acceptClause {
	var out []acceptClause
	for part := range strings.SplitSeq(h, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		typ, sub, ok := strings.Cut(mt, "/")
		if !ok {
			continue
		}
		c := acceptClause{typ: typ, sub: sub, params: params, q: 1}
		if qs, ok := params["q"]; ok {
			q, err := strconv.ParseFloat(qs, 64)
			if err != nil || q < 0 || q > 1 {
				continue
			}
			c.q = q
		}
		if c.q == 0 {
			continue
		}
		out = append(out, c)
	}
	slices.SortStableFunc(out, func(a, b acceptClause) int {
		if a.q != b.q {
			return cmp.Compare(b.q, a.q)
		}
		return cmp.Compare(a.wildcards(), b.wildcards())
	})
	return out
}

func (c acceptClause) wildcards() int {
	n := 0
	if c.typ == "*" {
		n++
	}
	if c.sub == "*" {
		n++
	}
	return n
}

// rendering reports what c asks for, or false when skiff cannot give it
// (YAML, protobuf, another group's conversion, PartialObjectMetadata).
func (c acceptClause) rendering() (rendering, bool) {
	if (c.typ != "application" || (c.sub != "json" && c.sub != "*")) && !(c.typ == "*" && c.sub == "*") {
		return rendering{}, false
	}
	as, ok := c.params["as"]
	if !ok {
		return rendering{}, true
	}
	if as != api.KindTable || c.params["g"] != api.MetaGroup {
		return rendering{}, false
	}
	switch c.params["v"] {
	case "v1":
		return rendering{table: true, apiVersion: api.MetaV1}, true
	case "v1beta1":
		return rendering{table: true, apiVersion: api.MetaV1beta1}, true
	}
	return rendering{}, false
}

// decodeStored decodes one stored object of res. Stored JSON was written
// by the store from a typed object, so failure means corruption.
func decodeStored(res *api.ResourceInfo, raw []byte) (api.Object, error) {
	obj := res.New()
	if err := json.Unmarshal(raw, obj); err != nil {
		return nil, fmt.Errorf("decode stored %s: %w", res.Resource, err)
	}
	return obj, nil
}

// renderTable builds the Table of raws (stored objects of res) at
// revision rv, ages measured from now, rows' Object filled as rd asks.
// withColumns false leaves ColumnDefinitions out (later watch events).
func renderTable(res *api.ResourceInfo, raws [][]byte, rv string, now time.Time, rd rendering, withColumns bool) (*api.Table, error) {
	objs := make([]api.Object, len(raws))
	for i, raw := range raws {
		obj, err := decodeStored(res, raw)
		if err != nil {
			return nil, err
		}
		objs[i] = obj
	}
	t, err := table.For(*res, objs, now)
	if err != nil {
		return nil, err
	}
	t.APIVersion = rd.apiVersion
	t.ResourceVersion = rv
	if !withColumns {
		t.ColumnDefinitions = nil
	}
	for i := range t.Rows {
		switch rd.include {
		case api.IncludeObject:
			t.Rows[i].Object = raws[i]
		case api.IncludeMetadata:
			b, err := json.Marshal(api.PartialObjectMetadata{
				TypeMeta:   api.TypeMeta{APIVersion: rd.apiVersion, Kind: api.KindPartialObjectMetadata},
				ObjectMeta: *objs[i].GetObjectMeta(),
			})
			if err != nil {
				return nil, fmt.Errorf("encode %s metadata: %w", res.Resource, err)
			}
			t.Rows[i].Object = b
		}
	}
	return t, nil
}

// tableOne renders one stored object as a one-row Table whose
// resourceVersion is the object's, as kube-apiserver renders a GET of a
// single object and each watch event.
func tableOne(res *api.ResourceInfo, raw []byte, now time.Time, rd rendering, withColumns bool) (*api.Table, error) {
	var m struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("decode stored %s: %w", res.Resource, err)
	}
	return renderTable(res, [][]byte{raw}, m.Metadata.ResourceVersion, now, rd, withColumns)
}
