package api

import (
	"encoding/json"
	"reflect"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// UnmarshalOwn decodes JSON that skiff itself wrote (stored objects, a
// server's answers and watch events) into v, a pointer to a zero value,
// as encoding/json.Unmarshal does, in about half the time and with half
// the allocations: encoding/json/v2's decoder (github.com/go-json-experiment/json,
// what Go ships as encoding/json/v2 behind GOEXPERIMENT=jsonv2) made as
// lenient as encoding/json where they could differ (names match without
// regard to case, a repeated name keeps the last value, invalid UTF-8 is
// accepted), and encoding/json itself for anything that decoder refuses,
// so errors are encoding/json's. Decoding was the store's largest CPU
// cost and a large part of an agent's. Input from users (request bodies,
// manifests) goes through DecodeJSON instead, for its strict field checks.
// FuzzUnmarshalOwnMatchesEncodingJSON and the per-kind and mutation tests
// beside it check the equivalence.
func UnmarshalOwn(data []byte, v any) error {
	if jsonv2.Unmarshal(data, v, ownJSON) == nil {
		return nil
	}
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer && !rv.IsNil() {
		rv.Elem().SetZero()
	}
	return json.Unmarshal(data, v)
}

var ownJSON = jsonv2.JoinOptions(
	jsonv2.MatchCaseInsensitiveNames(true),
	jsontext.AllowDuplicateNames(true),
	jsontext.AllowInvalidUTF8(true),
)
