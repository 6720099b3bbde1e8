package web

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
)

//go:embed static
var static embed.FS

// AssetPrefix is the URL path under which the dashboard's assets are
// served, followed by a hash of all of them: /assets/<hash>/app.js. The
// hash changes whenever any asset does, so assets may be cached for ever;
// index.html, which names the hash, is revalidated on every load.
const AssetPrefix = "/assets/"

// assetsPlaceholder is replaced in index.html by AssetPrefix + hash.
const assetsPlaceholder = "{{ASSETS}}"

// contentSecurityPolicy allows the page to load only its own assets and
// to talk only to its own origin.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// asset is one file as served.
type asset struct {
	body        []byte
	contentType string
	etag        string
}

// handler serves the dashboard; see Handler.
type handler struct {
	index  asset
	hash   string           // of all assets, in their URLs
	assets map[string]asset // by file name under static/
}

// Handler returns the dashboard's handler. It answers GET and HEAD of /
// and /index.html with the page (Cache-Control: no-cache, with an ETag),
// and of /assets/<hash>/<file> with the file (cached for a year,
// immutable, with an ETag). Anything else is a 404 Status (JSON, as the
// API's errors), and other methods a 405 Status.
// It is safe for concurrent use.
//
// The embedded files are fixed at build time and TestHandler reads them
// all, so Handler cannot fail in a tested build; if it did, every
// request would be answered 500 with the reason.
func Handler() http.Handler {
	h, err := newHandler(static)
	if err != nil {
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			writeStatus(w, http.StatusInternalServerError, "InternalError", err.Error())
		})
	}
	return h
}

func newHandler(fsys fs.FS) (*handler, error) {
	h := &handler{assets: map[string]asset{}}
	sum := sha256.New()
	var indexBody []byte
	err := fs.WalkDir(fsys, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		name := strings.TrimPrefix(p, "static/")
		if name == "index.html" {
			indexBody = body
			return nil
		}
		fmt.Fprintf(sum, "%s\x00%d\x00", name, len(body))
		sum.Write(body)
		h.assets[name] = newAsset(name, body)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("web: read assets: %w", err)
	}
	if indexBody == nil {
		return nil, fmt.Errorf("web: static/index.html is missing")
	}
	h.hash = hex.EncodeToString(sum.Sum(nil))[:16]
	h.index = newAsset("index.html", bytes.ReplaceAll(indexBody, []byte(assetsPlaceholder), []byte(AssetPrefix+h.hash)))
	return h, nil
}

func newAsset(name string, body []byte) asset {
	ct := mime.TypeByExtension(path.Ext(name))
	switch path.Ext(name) { // the system's MIME table may lack these
	case ".js":
		ct = "text/javascript; charset=utf-8"
	case ".css":
		ct = "text/css; charset=utf-8"
	case ".html":
		ct = "text/html; charset=utf-8"
	case ".svg":
		ct = "image/svg+xml"
	}
	if ct == "" {
		ct = "application/octet-stream"
	}
	sum := sha256.Sum256(body)
	return asset{body: body, contentType: ct, etag: `"` + hex.EncodeToString(sum[:])[:32] + `"`}
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeStatus(w, http.StatusMethodNotAllowed, "MethodNotAllowed", "the dashboard allows only GET and HEAD")
		return
	}
	p := r.URL.Path
	switch {
	case p == "/" || p == "/index.html":
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("Content-Security-Policy", contentSecurityPolicy)
		h.serve(w, r, h.index)
	case strings.HasPrefix(p, AssetPrefix+h.hash+"/"):
		a, ok := h.assets[strings.TrimPrefix(p, AssetPrefix+h.hash+"/")]
		if !ok {
			writeStatus(w, http.StatusNotFound, "NotFound", "the dashboard has no such asset")
			return
		}
		w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
		h.serve(w, r, a)
	default:
		// Includes assets under an older hash: answering them with
		// today's file would cache it under the wrong name for a year.
		writeStatus(w, http.StatusNotFound, "NotFound", "the server could not find the requested resource")
	}
}

// serve writes a with its ETag, answering 304 to a matching
// If-None-Match.
func (h *handler) serve(w http.ResponseWriter, r *http.Request, a asset) {
	hd := w.Header()
	hd.Set("ETag", a.etag)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	if etagMatches(r.Header.Get("If-None-Match"), a.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	hd.Set("Content-Type", a.contentType)
	hd.Set("Content-Length", fmt.Sprint(len(a.body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write(a.body)
	}
}

// etagMatches reports whether an If-None-Match header names etag (or is
// "*"). Weak validators match too, as RFC 9110 wants for If-None-Match.
func etagMatches(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == "*" || t == etag {
			return true
		}
	}
	return false
}

// writeStatus answers with a Kubernetes-shaped Status body, as the API
// does for its errors (the package imports nothing of skiff's, so the
// shape is written here).
func writeStatus(w http.ResponseWriter, code int, reason, message string) {
	b, err := json.Marshal(map[string]any{
		"kind": "Status", "apiVersion": "v1", "metadata": map[string]any{},
		"status": "Failure", "message": message, "reason": reason, "code": code,
	})
	if err != nil {
		b = []byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","code":500}`)
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	w.Write(append(b, '\n'))
}
