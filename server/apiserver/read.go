package apiserver

import (
	"bytes"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/fields"
	"github.com/skiffhq/skiff/api/labels"
	"github.com/skiffhq/skiff/storage"
)

// listOptions parses labelSelector and fieldSelector, refusing fields the
// kind does not offer (400, as Kubernetes does).
func (s *Server) listOptions(r *http.Request, rt route) (storage.ListOptions, error) {
	q := r.URL.Query()
	opts := storage.ListOptions{Namespace: rt.namespace}
	ls, err := labels.Parse(q.Get("labelSelector"))
	if err != nil {
		return opts, api.NewBadRequest("unable to parse labelSelector: %v", err)
	}
	fs, err := fields.Parse(q.Get("fieldSelector"))
	if err != nil {
		return opts, api.NewBadRequest("unable to parse fieldSelector: %v", err)
	}
	supported := api.SelectableFields(rt.res.New())
	for _, req := range fs.Requirements() {
		if _, ok := supported[req.Field]; !ok {
			names := make([]string, 0, len(supported))
			for k := range supported {
				names = append(names, k)
			}
			sort.Strings(names)
			return opts, api.NewBadRequest("field label not supported: %s (supported: %s)", req.Field, strings.Join(names, ", "))
		}
	}
	opts.Labels, opts.Fields = ls, fs
	return opts, nil
}

// list answers a collection GET with the stored bytes of each item, so a
// list of many objects costs no decoding or re-encoding; or, when the
// Accept header asks for one (kubectl get), with a Table of them.
func (s *Server) list(w http.ResponseWriter, r *http.Request, rt route) {
	rd, err := negotiate(r)
	if err != nil {
		s.writeError(w, r, err, rt.res, "")
		return
	}
	opts, err := s.listOptions(r, rt)
	if err != nil {
		s.writeError(w, r, err, rt.res, "")
		return
	}
	items, rev, err := s.store.ListRaw(r.Context(), rt.res.Resource, opts)
	if err != nil {
		s.writeError(w, r, err, rt.res, "")
		return
	}
	if rd.table {
		t, err := renderTable(rt.res, items, strconv.FormatInt(rev, 10), s.clock.Now(), rd, true)
		if err != nil {
			s.writeError(w, r, err, rt.res, "")
			return
		}
		writeJSON(w, http.StatusOK, t)
		return
	}
	writeRaw(w, http.StatusOK, listBytes(rt.res, items, rev))
}

// listBytes assembles a XxxList around already-encoded items.
func listBytes(res *api.ResourceInfo, items [][]byte, rev int64) []byte {
	n := 128
	for _, it := range items {
		n += len(it) + 1
	}
	var b bytes.Buffer
	b.Grow(n)
	b.WriteString(`{"kind":"`)
	b.WriteString(res.ListKind())
	b.WriteString(`","apiVersion":"`)
	b.WriteString(res.GroupVersion())
	b.WriteString(`","metadata":{"resourceVersion":"`)
	b.WriteString(strconv.FormatInt(rev, 10))
	b.WriteString(`"},"items":[`)
	for i, it := range items {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(it)
	}
	b.WriteString("]}")
	return b.Bytes()
}

// get answers a GET of one object (or its /status) with its stored
// bytes, or with a one-row Table when the Accept header asks for one.
func (s *Server) get(w http.ResponseWriter, r *http.Request, rt route) {
	rd, err := negotiate(r)
	if err != nil {
		s.writeError(w, r, err, rt.res, rt.name)
		return
	}
	raw, _, err := s.store.GetRaw(r.Context(), rt.res.Resource, rt.namespace, rt.name)
	if err != nil {
		s.writeError(w, r, err, rt.res, rt.name)
		return
	}
	if rd.table {
		t, err := tableOne(rt.res, raw, s.clock.Now(), rd, true)
		if err != nil {
			s.writeError(w, r, err, rt.res, rt.name)
			return
		}
		writeJSON(w, http.StatusOK, t)
		return
	}
	writeRaw(w, http.StatusOK, raw)
}
