package apiserver

import (
	"bytes"
	"unicode/utf8"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/deepcopy"
)

// The node's conditions patch, typed.
//
// Every agent sends {"status":{"conditions":[...]}} as a strategic merge
// patch of its Node's status: at start, when a condition changes, and
// every few minutes so that the stored lastHeartbeatTime stays fresh. The
// generic path encodes the stored Node, decodes it and the patch into
// maps, merges them, encodes the result and decodes it again: 27 KB and
// 545 allocations a patch more than this one (BenchmarkNodeConditionsPatch),
// and up to a fifth of a 10,000-agent server's steady garbage (33 patches
// a second, in waves). The usual patch names the conditions the Node
// already has, in the same order, with nothing but their plain fields: for
// that one shape the merge is field by field on a copy of the typed Node.
// Anything else (another member, a directive, a condition added, removed
// or reordered, an escape in a string, a value of the wrong type) takes
// the generic path, which stays the definition: FuzzNodeConditionsPatch
// checks that both agree wherever the typed one answers.

// conditionsPatch is the only shape the typed path takes.
type conditionsPatch struct {
	Status *struct {
		Conditions []map[string]jsontext.Value `json:"conditions"`
	} `json:"status"`
}

// patchConditionsOnly is strict: exact names, nothing unknown, no name
// twice (json v2's defaults, spelled out).
var patchConditionsOnly = jsonv2.JoinOptions(
	jsonv2.RejectUnknownMembers(true),
	jsonv2.MatchCaseInsensitiveNames(false),
	jsontext.AllowDuplicateNames(false),
	jsontext.AllowInvalidUTF8(false),
)

// nodeConditionsPatch applies body, a strategic merge patch, to cur when
// it is the agents' conditions patch (above), and returns the result and
// true; otherwise it returns false and the caller takes the generic path.
// cur is not changed.
func nodeConditionsPatch(cur *api.Node, body []byte) (*api.Node, bool) {
	conds := cur.Status.Conditions
	if len(conds) == 0 || !utf8.Valid(body) || bytes.IndexByte(body, '\\') >= 0 {
		return nil, false
	}
	var p conditionsPatch
	if err := jsonv2.Unmarshal(body, &p, patchConditionsOnly); err != nil {
		return nil, false
	}
	if p.Status == nil || len(p.Status.Conditions) != len(conds) {
		return nil, false
	}
	for i, c := range conds {
		for _, o := range conds[:i] {
			if o.Type == c.Type {
				return nil, false // the generic merge's first-match rule
			}
		}
		t, ok := plainString(p.Status.Conditions[i]["type"])
		if !ok || t != c.Type {
			return nil, false
		}
	}
	next := deepcopy.Of(cur)
	for i, m := range p.Status.Conditions {
		if !setConditionFields(&next.Status.Conditions[i], m) {
			return nil, false
		}
	}
	return next, true
}

// setConditionFields sets c's fields that m names, as a merge would: a
// null clears one. It reports false for a name or value it does not take.
func setConditionFields(c *api.NodeCondition, m map[string]jsontext.Value) bool {
	for k, v := range m {
		switch k {
		case "type":
			// Checked equal to c.Type.
		case "status", "reason", "message":
			s, ok := plainString(v)
			if !ok && !isNull(v) {
				return false
			}
			switch k {
			case "status":
				c.Status = s
			case "reason":
				c.Reason = s
			default:
				c.Message = s
			}
		case "lastHeartbeatTime", "lastTransitionTime":
			if !isNull(v) {
				if _, ok := plainString(v); !ok {
					return false
				}
			}
			t := &c.LastHeartbeatTime
			if k == "lastTransitionTime" {
				t = &c.LastTransitionTime
			}
			if err := t.UnmarshalJSON(v); err != nil {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// plainString returns the content of v when v is a JSON string (the
// caller has refused escapes and invalid UTF-8, so its bytes are the
// string's).
func plainString(v jsontext.Value) (string, bool) {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return "", false
	}
	return string(v[1 : len(v)-1]), true
}

func isNull(v jsontext.Value) bool { return string(v) == "null" }
