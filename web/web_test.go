package web

import (
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"
)

// maxTotalBytes is the budget for the whole dashboard.
const maxTotalBytes = 150 << 10

func get(t *testing.T, h http.Handler, method, path string, hdr map[string]string) *http.Response {
	t.Helper()
	req := httptest.NewRequest(method, path, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result()
}

func body(t *testing.T, res *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// assetURLs returns the /assets/<hash>/<file> URLs index.html names.
func assetURLs(index string) []string {
	return regexp.MustCompile(`/assets/[0-9a-f]{16}/[a-z]+\.[a-z]+`).FindAllString(index, -1)
}

func TestIndexIsRevalidatedAndNamesHashedAssets(t *testing.T) {
	h := Handler()
	for _, path := range []string{"/", "/index.html"} {
		res := get(t, h, "GET", path, nil)
		if res.StatusCode != 200 {
			t.Fatalf("GET %s = %d; want 200", path, res.StatusCode)
		}
		for k, want := range map[string]string{
			"Cache-Control":          "no-cache",
			"Content-Type":           "text/html; charset=utf-8",
			"X-Content-Type-Options": "nosniff",
		} {
			if got := res.Header.Get(k); got != want {
				t.Errorf("GET %s: %s = %q; want %q", path, k, got, want)
			}
		}
		if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "connect-src 'self'") {
			t.Errorf("GET %s: Content-Security-Policy = %q; want script-src and connect-src 'self'", path, csp)
		}
		b := body(t, res)
		if strings.Contains(b, assetsPlaceholder) {
			t.Errorf("GET %s still holds %s", path, assetsPlaceholder)
		}
		if urls := assetURLs(b); len(urls) < 3 {
			t.Errorf("GET %s names assets %q; want the stylesheet, the script and the icon", path, urls)
		}
		etag := res.Header.Get("ETag")
		if etag == "" {
			t.Fatalf("GET %s has no ETag", path)
		}
		res = get(t, h, "GET", path, map[string]string{"If-None-Match": etag})
		if res.StatusCode != http.StatusNotModified || body(t, res) != "" {
			t.Errorf("GET %s with If-None-Match: %d; want 304 with no body", path, res.StatusCode)
		}
	}
}

func TestAssetsAreImmutableWithETags(t *testing.T) {
	h := Handler()
	index := body(t, get(t, h, "GET", "/", nil))
	wantType := map[string]string{".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8", ".svg": "image/svg+xml"}
	for _, u := range assetURLs(index) {
		res := get(t, h, "GET", u, nil)
		if res.StatusCode != 200 {
			t.Fatalf("GET %s = %d; want 200", u, res.StatusCode)
		}
		if got := res.Header.Get("Cache-Control"); got != "public, max-age=31536000, immutable" {
			t.Errorf("GET %s: Cache-Control = %q; want immutable for a year", u, got)
		}
		ext := u[strings.LastIndex(u, "."):]
		if got := res.Header.Get("Content-Type"); got != wantType[ext] {
			t.Errorf("GET %s: Content-Type = %q; want %q", u, got, wantType[ext])
		}
		etag := res.Header.Get("ETag")
		for _, inm := range []string{etag, "W/" + etag, `"other", ` + etag, "*"} {
			if res := get(t, h, "GET", u, map[string]string{"If-None-Match": inm}); res.StatusCode != http.StatusNotModified {
				t.Errorf("GET %s with If-None-Match %q = %d; want 304", u, inm, res.StatusCode)
			}
		}
		if res := get(t, h, "GET", u, map[string]string{"If-None-Match": `"other"`}); res.StatusCode != 200 {
			t.Errorf("GET %s with a stale If-None-Match = %d; want 200", u, res.StatusCode)
		}
		if res := get(t, h, "HEAD", u, nil); res.StatusCode != 200 || body(t, res) != "" || res.Header.Get("Content-Length") == "" {
			t.Errorf("HEAD %s = %d with a body or without Content-Length; want 200, empty, with a length", u, res.StatusCode)
		}
	}
	// Every module the script imports is served under the same hash.
	for _, m := range regexp.MustCompile(`from "\./([a-z]+\.js)"`).FindAllStringSubmatch(readAll(t), -1) {
		u := assetURLs(index)[0]
		u = u[:strings.LastIndex(u, "/")+1] + m[1]
		if res := get(t, h, "GET", u, nil); res.StatusCode != 200 {
			t.Errorf("imported module %s = %d; want 200", u, res.StatusCode)
		}
	}
}

// readAll returns every embedded file's text, concatenated.
func readAll(t *testing.T) string {
	t.Helper()
	var sb strings.Builder
	err := fs.WalkDir(static, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(static, p)
		sb.Write(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return sb.String()
}

func TestUnknownPathsMethodsAndOldHashes(t *testing.T) {
	h := Handler()
	for _, tc := range []struct {
		method, path string
		want         int
	}{
		{"GET", "/assets/0123456789abcdef/app.js", 404}, // an older build's hash
		{"GET", "/nope", 404},
		{"GET", "/assets/", 404},
		{"POST", "/", 405},
		{"DELETE", "/index.html", 405},
	} {
		res := get(t, h, tc.method, tc.path, nil)
		if res.StatusCode != tc.want {
			t.Errorf("%s %s = %d; want %d", tc.method, tc.path, res.StatusCode, tc.want)
		}
		// Issue 16 defect 8: a Status body, not plain text.
		var st struct {
			Kind string `json:"kind"`
			Code int    `json:"code"`
		}
		b := body(t, res)
		if err := json.Unmarshal([]byte(b), &st); err != nil || st.Kind != "Status" || st.Code != tc.want || res.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s %s: body %q (%s); want a Status with code %d", tc.method, tc.path, b, res.Header.Get("Content-Type"), tc.want)
		}
	}
	index := body(t, get(t, h, "GET", "/", nil))
	u := assetURLs(index)[0]
	if res := get(t, h, "GET", u[:strings.LastIndex(u, "/")+1]+"missing.js", nil); res.StatusCode != 404 {
		t.Errorf("GET of a missing asset under the current hash = %d; want 404", res.StatusCode)
	}
}

func TestHashChangesWithAnyAsset(t *testing.T) {
	base := fstest.MapFS{
		"static/index.html": {Data: []byte(`<script src="{{ASSETS}}/a.js"></script>`)},
		"static/a.js":       {Data: []byte("1")},
	}
	h1, err := newHandler(base)
	if err != nil {
		t.Fatal(err)
	}
	base["static/a.js"] = &fstest.MapFile{Data: []byte("2")}
	h2, err := newHandler(base)
	if err != nil {
		t.Fatal(err)
	}
	if h1.hash == h2.hash {
		t.Errorf("hash %s did not change when a.js did", h1.hash)
	}
	if _, err := newHandler(fstest.MapFS{"static/a.js": {Data: []byte("1")}}); err == nil {
		t.Error("newHandler without index.html succeeded; want an error")
	}
}

// TestDashboardSize holds the budget: the whole dashboard under
// 150 KB uncompressed — skiff's own files (static/vendor/, if a
// vendored file ever comes back, is held by TestPageWeight).
func TestDashboardSize(t *testing.T) {
	total := 0
	err := fs.WalkDir(static, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasPrefix(p, "static/vendor/") {
			return err
		}
		b, err := fs.ReadFile(static, p)
		total += len(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("dashboard assets: %d bytes", total)
	if total > maxTotalBytes {
		t.Errorf("dashboard assets are %d bytes; the budget is %d", total, maxTotalBytes)
	}
}

// TestPageWeight keeps everything the dashboard may load (the page, its
// scripts and styles, the terminal) under 400 KB.
func TestPageWeight(t *testing.T) {
	const limit = 400 << 10
	total := 0
	err := fs.WalkDir(static, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(static, p)
		total += len(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if total > limit {
		t.Fatalf("the dashboard's files weigh %d bytes; keep them under %d", total, limit)
	}
	t.Logf("dashboard: %d bytes", total)
}
