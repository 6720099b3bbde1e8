package fleet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/client"
)

// The placement's admin watch reads only what its tracker needs of each
// pod event: a name, the node it is bound to and its phase. A placement
// sends it every create, bind and status write of 10,000 pods (30,000
// events or more); decoded into whole api.Pods by client.Watcher, they
// cost this simulator 0.70 CPU-s of a placement's 16 s (round
// thirty-nine's profile), on the cores the server needs, and the watch,
// one goroutine among the fleet's, fell behind: in round thirty-eight's
// BP it saw the last bind 2.8 s after the last replica had reached its
// agent.

// podWatchEvent is a watch event as the tracker reads it. Status is kept
// raw: a pod's is an object, an ERROR event's object (a Status) has a
// string there.
type podWatchEvent struct {
	Type   string `json:"type"`
	Object struct {
		Metadata struct {
			Namespace       string `json:"namespace"`
			Name            string `json:"name"`
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
		Spec struct {
			NodeName string `json:"nodeName"`
		} `json:"spec"`
		Status jsontext.Value `json:"status"`
	} `json:"object"`
}

// podPhase is the part of a pod's status the tracker reads.
type podPhase struct {
	Phase string `json:"phase"`
}

// podWatch is an admin watch of the pods labelled app=fleet-web in
// namespace default.
type podWatch struct {
	body io.ReadCloser
	dec  *jsontext.Decoder
	rv   string // the last resourceVersion seen, to resume from
	ev   podWatchEvent
}

// openPodWatch opens the watch from resourceVersion rv ("": from now, with
// the current pods first).
func openPodWatch(ctx context.Context, admin *client.Client, rv string) (*podWatch, error) {
	q := url.Values{"watch": {"true"}, "allowWatchBookmarks": {"true"}, "labelSelector": {"app=fleet-web"}}
	if rv != "" {
		q.Set("resourceVersion", rv)
	}
	resp, err := admin.Do(ctx, http.MethodGet, "/api/v1/namespaces/default/pods?"+q.Encode(), nil)
	if err != nil {
		return nil, err
	}
	return newPodWatch(resp.Body, rv), nil
}

func newPodWatch(body io.ReadCloser, rv string) *podWatch {
	return &podWatch{body: body, dec: jsontext.NewDecoder(body), rv: rv}
}

// next returns the next pod event (ADDED, MODIFIED or DELETED): namespace
// and name, node, and phase. BOOKMARKs only move the resume point; an
// ERROR event is returned as its *api.StatusError (client.IsGone: start
// over). The event's strings stay valid until the next call.
func (w *podWatch) next() (typ, ns, name, node, phase string, err error) {
	for {
		v, err := w.dec.ReadValue()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return "", "", "", "", "", fmt.Errorf("read the pod watch: %w", err)
		}
		w.ev = podWatchEvent{}
		if err := json.Unmarshal(v, &w.ev); err != nil {
			return "", "", "", "", "", fmt.Errorf("decode a pod watch event: %w", err)
		}
		o := &w.ev.Object
		switch w.ev.Type {
		case api.Bookmark:
			w.rv = o.Metadata.ResourceVersion
			continue
		case api.Error:
			var st api.Status
			if err := json.Unmarshal(v, &struct {
				Object *api.Status `json:"object"`
			}{&st}); err != nil {
				return "", "", "", "", "", fmt.Errorf("decode a pod watch's error: %w", err)
			}
			return "", "", "", "", "", &api.StatusError{Status: st}
		case api.Added, api.Modified, api.Deleted:
		default:
			return "", "", "", "", "", fmt.Errorf("pod watch: event of type %q", w.ev.Type)
		}
		if o.Metadata.ResourceVersion != "" {
			w.rv = o.Metadata.ResourceVersion
		}
		var ph podPhase
		if len(o.Status) > 0 {
			if err := json.Unmarshal(o.Status, &ph); err != nil {
				return "", "", "", "", "", fmt.Errorf("decode a pod's status: %w", err)
			}
		}
		return w.ev.Type, o.Metadata.Namespace, o.Metadata.Name, o.Spec.NodeName, ph.Phase, nil
	}
}

// resourceVersion is where a new watch resumes this one.
func (w *podWatch) resourceVersion() string { return w.rv }

func (w *podWatch) close() error { return w.body.Close() }
