package apiserver

import (
	"encoding/binary"
	"strings"
	"testing"
)

// pb builds protobuf messages for tests.
type pb []byte

func (p pb) key(num, wire int) pb { return binary.AppendUvarint(p, uint64(num<<3|wire)) }

func (p pb) str(num int, s string) pb { return p.bytes(num, []byte(s)) }

func (p pb) bytes(num int, b []byte) pb {
	p = p.key(num, 2)
	p = binary.AppendUvarint(p, uint64(len(b)))
	return append(p, b...)
}

func (p pb) varint(num int, v int64) pb { return binary.AppendUvarint(p.key(num, 0), uint64(v)) }

func (p pb) entry(num int, k, v string) pb { return p.bytes(num, pb{}.str(1, k).str(2, v)) }

// envelope wraps raw in the k8s magic and runtime.Unknown.
func envelope(apiVersion, kind string, raw pb) []byte {
	u := pb{}.bytes(1, pb{}.str(1, apiVersion).str(2, kind)).bytes(2, raw).str(3, "").str(4, "")
	return append([]byte("k8s\x00"), u...)
}

// configMapPB is what kubectl create configmap sends: every non-pointer
// field written, empty ones included.
func configMapPB(name string) []byte {
	meta := pb{}.str(1, name).str(2, "").str(3, "").str(4, "").str(5, "").str(6, "").varint(7, 0).bytes(8, nil).entry(11, "team", "a")
	return envelope("v1", "ConfigMap", pb{}.bytes(1, meta).entry(2, "color", "blue").entry(2, "size", ""))
}

func deploymentPB() []byte {
	meta := pb{}.str(1, "gen").bytes(8, nil).entry(11, "app", "gen")
	port := pb{}.str(1, "").varint(2, 0).varint(3, 80).str(4, "TCP").str(5, "")
	limits := pb{}.str(1, "memory").bytes(2, pb{}.str(1, "64Mi"))
	container := pb{}.str(1, "web").str(2, "nginx:1.27").str(3, "sleep").str(3, "10").bytes(6, port).
		bytes(8, pb{}.bytes(1, limits)).varint(16, 0).varint(17, 0)
	podSpec := pb{}.bytes(2, container).str(3, "").varint(11, 0).varint(12, 0)
	template := pb{}.bytes(1, pb{}.bytes(8, nil).entry(11, "app", "gen")).bytes(2, podSpec)
	maxSurge := pb{}.varint(1, 1).varint(2, 0).str(3, "30%")
	spec := pb{}.varint(1, 0).bytes(2, pb{}.entry(1, "app", "gen")).bytes(3, template).
		bytes(4, pb{}.str(1, "RollingUpdate").bytes(2, pb{}.bytes(2, maxSurge))).varint(5, 0)
	return envelope("apps/v1", "Deployment", pb{}.bytes(1, meta).bytes(2, spec).bytes(3, nil))
}

func TestProtobufToJSON(t *testing.T) {
	for _, tc := range []struct {
		name string
		body []byte
		want string
	}{
		{"configmap", configMapPB("settings"),
			`{"apiVersion":"v1","data":{"color":"blue","size":""},"kind":"ConfigMap","metadata":{"labels":{"team":"a"},"name":"settings"}}`},
		{"deployment", deploymentPB(),
			`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"labels":{"app":"gen"},"name":"gen"},"spec":{"replicas":0,"selector":{"matchLabels":{"app":"gen"}},` +
				`"strategy":{"rollingUpdate":{"maxSurge":"30%"},"type":"RollingUpdate"},"template":{"metadata":{"labels":{"app":"gen"}},` +
				`"spec":{"containers":[{"command":["sleep","10"],"image":"nginx:1.27","name":"web","ports":[{"containerPort":80,"protocol":"TCP"}],` +
				`"resources":{"limits":{"memory":"64Mi"}}}]}}},"status":{}}`},
		{"secret bytes", envelope("v1", "Secret", pb{}.bytes(1, pb{}.str(1, "s")).bytes(2, pb{}.str(1, "k").bytes(2, []byte{0xff, 0}))),
			`{"apiVersion":"v1","data":{"k":"/wA="},"kind":"Secret","metadata":{"name":"s"}}`},
		{"time", envelope("v1", "Namespace", pb{}.bytes(1, pb{}.str(1, "n").bytes(8, pb{}.varint(1, 1700000000)))),
			`{"apiVersion":"v1","kind":"Namespace","metadata":{"creationTimestamp":"2023-11-14T22:13:20Z","name":"n"}}`},
	} {
		got, err := protobufToJSON(tc.body)
		if err != nil || string(got) != tc.want {
			t.Errorf("protobufToJSON(%s) = %s, %v; want %s", tc.name, got, err, tc.want)
		}
	}
}

func TestProtobufToJSONErrors(t *testing.T) {
	cm := configMapPB("x")
	for _, tc := range []struct {
		name string
		body []byte
		want string
	}{
		{"no magic", []byte("{}"), "magic number"},
		{"empty", nil, "magic number"},
		{"truncated", cm[:len(cm)-3], "malformed protobuf"},
		{"bad wire type", append([]byte("k8s\x00"), 0x0f), "malformed protobuf"},
		{"pod", envelope("v1", "Pod", pb{}), `not "Pod"`},
		{"unknown field set", envelope("v1", "ConfigMap", pb{}.str(9, "x")), "field 9 of ConfigMap"},
		{"wrong wire type", envelope("v1", "ConfigMap", pb{}.varint(1, 3)), "wire type"},
		{"huge length", append([]byte("k8s\x00"), 0x12, 0xff, 0xff, 0xff, 0xff, 0x0f), "malformed protobuf"},
	} {
		_, err := protobufToJSON(tc.body)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("protobufToJSON(%s) error = %v; want one containing %q", tc.name, err, tc.want)
		}
	}
}

// TestProtobufCreate posts protobuf bodies as kubectl create does.
func TestProtobufCreate(t *testing.T) {
	h := newHarness(t)
	code, b := h.do("POST", "/api/v1/namespaces/default/configmaps", protobufMediaType, string(configMapPB("settings")))
	if code != 201 || !strings.Contains(string(b), `"color":"blue"`) {
		t.Errorf("POST protobuf configmap = %d %s; want 201", code, b)
	}
	code, b = h.do("POST", "/apis/apps/v1/namespaces/default/deployments", protobufMediaType, string(deploymentPB()))
	if code != 201 || !strings.Contains(string(b), `"maxSurge":"30%"`) || !strings.Contains(string(b), `"replicas":0`) {
		t.Errorf("POST protobuf deployment = %d %s; want 201", code, b)
	}
	code, b = h.do("POST", "/api/v1/namespaces/default/secrets", protobufMediaType, string(configMapPB("wrong")))
	if code != 400 || !strings.Contains(string(b), "the URL is for v1 Secret") {
		t.Errorf("POST a protobuf ConfigMap to secrets = %d %s; want 400", code, b)
	}
}

func FuzzProtobufToJSON(f *testing.F) {
	f.Add(configMapPB("a"))
	f.Add(deploymentPB())
	f.Add([]byte("k8s\x00\x0a\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		protobufToJSON(b) // must not panic
	})
}
