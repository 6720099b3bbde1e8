package storage

import (
	"encoding/json"
	"testing"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/storage/internal/fixtures"
)

// decodeV1 is what decode did before api.UnmarshalOwn: encoding/json alone.
func decodeV1(info *api.ResourceInfo, value []byte) (api.Object, error) {
	obj := info.New()
	return obj, json.Unmarshal(value, obj)
}

// BenchmarkDecodeStoredPod decodes a realistic stored pod (fixtures.Pod)
// with decode and with encoding/json alone.
func BenchmarkDecodeStoredPod(b *testing.B) {
	info, _ := api.LookupResource("pods")
	raw, _ := json.Marshal(fixtures.Pod("default", "web-0", map[string]string{"app": "web", "tier": "front"}))
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := decode(&info, raw); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := decodeV1(&info, raw); err != nil {
				b.Fatal(err)
			}
		}
	})
}
