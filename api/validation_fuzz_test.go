package api

import (
	"encoding/json"
	"testing"
)

// FuzzValidatePod checks that defaulting and validating any pod that
// decodes never panics, and that a second SetDefaults changes nothing.
// Seeds live in testdata/fuzz/FuzzValidatePod.
func FuzzValidatePod(f *testing.F) {
	if b, err := json.Marshal(validPod()); err == nil {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var p Pod
		if err := json.Unmarshal(data, &p); err != nil {
			return
		}
		var old Pod
		_ = json.Unmarshal(data, &old)
		SetDefaults(&p)
		once, err := json.Marshal(&p)
		if err != nil {
			return
		}
		SetDefaults(&p)
		twice, _ := json.Marshal(&p)
		if string(once) != string(twice) {
			t.Errorf("SetDefaults is not idempotent:\n%s\n%s", once, twice)
		}
		_ = Validate(&p)
		_ = ValidateUpdate(&p, &old)
		_ = QOSClass(&p)
	})
}
