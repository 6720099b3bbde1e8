package api

import (
	"os"
	"path/filepath"
	"testing"
)

// validationManifestsDir holds the Kubernetes documentation examples that
// skiff must accept unchanged; CI checks out shared/ beside the repository
// root, so from this package it is two levels up.
const validationManifestsDir = "../../shared/manifests"

// TestSharedManifestsValidate decodes every shared manifest strictly,
// defaults it and validates it, as the API server does on POST (filling
// the namespace from the URL when the manifest has none).
func TestSharedManifestsValidate(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(validationManifestsDir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in %s (err %v); CI must check out shared/ beside the repository", validationManifestsDir, err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatalf("read %s: %v", f, err)
		}
		docs := SplitYAML(data)
		if len(docs) == 0 {
			t.Errorf("%s: no documents", filepath.Base(f))
		}
		for i, doc := range docs {
			obj, err := DecodeObject(doc)
			if err != nil {
				t.Errorf("DecodeObject(%s #%d) error = %v", filepath.Base(f), i, err)
				continue
			}
			if r, _ := ResourceOf(obj); r.Namespaced && obj.GetObjectMeta().Namespace == "" {
				obj.GetObjectMeta().Namespace = "default"
			}
			SetDefaults(obj)
			if errs := Validate(obj); errs != nil {
				t.Errorf("Validate(%s #%d) = %v; want nil", filepath.Base(f), i, errs)
			}
			if errs := ValidateUpdate(obj, obj); errs != nil {
				t.Errorf("ValidateUpdate(%s #%d, itself) = %v; want nil", filepath.Base(f), i, errs)
			}
		}
	}
}
