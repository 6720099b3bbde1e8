package apiserver

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/skiffhq/skiff/api"
)

// This file reads request bodies in Kubernetes' protobuf encoding
// (application/vnd.kubernetes.protobuf). Since 1.32, client-go's typed
// clients send protobuf for built-in kinds, and kubectl's generators
// (kubectl create configmap | secret | namespace | deployment) use them;
// there is no fallback to JSON on 415. skiff does not speak protobuf
// otherwise: bodies are transcoded to JSON here, by tables of the proto
// field numbers of exactly the messages those generators send, and then
// decoded strictly like any JSON body. Responses stay JSON, which those
// clients accept. A field number the tables do not know is an error, not
// a silent drop, unless it holds the zero value (the encoder writes every
// non-pointer field).

// protobufMediaType is Kubernetes' protobuf content type.
const protobufMediaType = "application/vnd.kubernetes.protobuf"

// protobufMagic starts every Kubernetes protobuf body; a runtime.Unknown
// message follows.
var protobufMagic = []byte("k8s\x00")

// pbKind is how one proto field maps to JSON.
type pbKind int

const (
	pbString pbKind = iota
	pbBytes         // base64 in JSON
	pbInt           // any varint integer
	pbBool
	pbMessage     // nested message, pbField.msg names it
	pbTime        // metav1.Time: {seconds, nanos} → RFC 3339; empty → omitted
	pbIntOrString // intstr.IntOrString: {type, intVal, strVal}
	pbQuantity    // resource.Quantity: {string}
	pbStringMap   // map<string,string>
	pbBytesMap    // map<string,bytes>
	pbQuantityMap // map<string,Quantity>
)

// pbField is one field of a message table.
type pbField struct {
	json     string
	kind     pbKind
	msg      string
	repeated bool
	// ptr marks an optional field (a pointer in Go) whose zero value was
	// set on purpose (replicas: 0). Other scalar fields are always
	// written, so their zero value means "not set" and is left out.
	ptr bool
}

// pbMessages maps a message name to its fields by number.
type pbMessages map[string]map[uint64]pbField

// protobufKinds are the top-level kinds a protobuf body may hold.
var protobufKinds = map[string]bool{"ConfigMap": true, "Secret": true, "Namespace": true, "Deployment": true, "Job": true, "CronJob": true, "PodDisruptionBudget": true,
	// kubectl create serviceaccount | rolebinding | clusterrolebinding |
	// role | clusterrole | token, and kubectl auth can-i | whoami.
	"ServiceAccount": true, "Role": true, "ClusterRole": true, "RoleBinding": true, "ClusterRoleBinding": true,
	"TokenRequest": true, "SelfSubjectAccessReview": true, "SelfSubjectReview": true, "SelfSubjectRulesReview": true}

// protobufTables returns the field tables, from k8s.io/api's
// generated.proto (core/v1, apps/v1, meta/v1).
func protobufTables() pbMessages {
	str := func(j string) pbField { return pbField{json: j, kind: pbString} }
	strs := func(j string) pbField { return pbField{json: j, kind: pbString, repeated: true} }
	num := func(j string) pbField { return pbField{json: j, kind: pbInt} }
	boolean := func(j string) pbField { return pbField{json: j, kind: pbBool} }
	ptrNum := func(j string) pbField { return pbField{json: j, kind: pbInt, ptr: true} }
	ptrBool := func(j string) pbField { return pbField{json: j, kind: pbBool, ptr: true} }
	msg := func(j, m string) pbField { return pbField{json: j, kind: pbMessage, msg: m} }
	msgs := func(j, m string) pbField { return pbField{json: j, kind: pbMessage, msg: m, repeated: true} }
	of := func(j string, k pbKind) pbField { return pbField{json: j, kind: k} }
	return pbMessages{
		"ObjectMeta": {1: str("name"), 2: str("generateName"), 3: str("namespace"), 5: str("uid"), 6: str("resourceVersion"),
			7: num("generation"), 8: of("creationTimestamp", pbTime), 9: of("deletionTimestamp", pbTime),
			10: ptrNum("deletionGracePeriodSeconds"), 11: of("labels", pbStringMap), 12: of("annotations", pbStringMap),
			13: msgs("ownerReferences", "OwnerReference"), 14: strs("finalizers")},
		"OwnerReference":           {1: str("kind"), 3: str("name"), 4: str("uid"), 5: str("apiVersion"), 6: ptrBool("controller"), 7: ptrBool("blockOwnerDeletion")},
		"LabelSelector":            {1: of("matchLabels", pbStringMap), 2: msgs("matchExpressions", "LabelSelectorRequirement")},
		"LabelSelectorRequirement": {1: str("key"), 2: str("operator"), 3: strs("values")},

		"ConfigMap":       {1: msg("metadata", "ObjectMeta"), 2: of("data", pbStringMap), 3: of("binaryData", pbBytesMap), 4: ptrBool("immutable")},
		"Secret":          {1: msg("metadata", "ObjectMeta"), 2: of("data", pbBytesMap), 3: str("type"), 4: of("stringData", pbStringMap), 5: ptrBool("immutable")},
		"Namespace":       {1: msg("metadata", "ObjectMeta"), 2: msg("spec", "NamespaceSpec"), 3: msg("status", "NamespaceStatus")},
		"NamespaceSpec":   {1: strs("finalizers")},
		"NamespaceStatus": {1: str("phase")},

		"Deployment": {1: msg("metadata", "ObjectMeta"), 2: msg("spec", "DeploymentSpec"), 3: msg("status", "DeploymentStatus")},
		"DeploymentSpec": {1: ptrNum("replicas"), 2: msg("selector", "LabelSelector"), 3: msg("template", "PodTemplateSpec"),
			4: msg("strategy", "DeploymentStrategy"), 5: num("minReadySeconds"), 6: ptrNum("revisionHistoryLimit"),
			7: boolean("paused"), 9: ptrNum("progressDeadlineSeconds")},
		"DeploymentStrategy":      {1: str("type"), 2: msg("rollingUpdate", "RollingUpdateDeployment")},
		"RollingUpdateDeployment": {1: of("maxUnavailable", pbIntOrString), 2: of("maxSurge", pbIntOrString)},
		"DeploymentStatus": {1: num("observedGeneration"), 2: num("replicas"), 3: num("updatedReplicas"), 4: num("availableReplicas"),
			5: num("unavailableReplicas"), 7: num("readyReplicas"), 8: ptrNum("collisionCount")},

		// batch/v1, for kubectl create job and create cronjob.
		"Job":       {1: msg("metadata", "ObjectMeta"), 2: msg("spec", "JobSpec"), 3: msg("status", "JobStatus")},
		"JobStatus": {4: num("active"), 5: num("succeeded"), 6: num("failed")},
		"JobSpec": {1: ptrNum("parallelism"), 2: ptrNum("completions"), 3: ptrNum("activeDeadlineSeconds"), 4: msg("selector", "LabelSelector"),
			5: ptrBool("manualSelector"), 6: msg("template", "PodTemplateSpec"), 7: ptrNum("backoffLimit"), 8: ptrNum("ttlSecondsAfterFinished"),
			9: str("completionMode"), 10: ptrBool("suspend"), 14: str("podReplacementPolicy")},
		"CronJob":       {1: msg("metadata", "ObjectMeta"), 2: msg("spec", "CronJobSpec"), 3: msg("status", "CronJobStatus")},
		"CronJobStatus": {},
		"CronJobSpec": {1: str("schedule"), 2: ptrNum("startingDeadlineSeconds"), 3: str("concurrencyPolicy"), 4: ptrBool("suspend"),
			5: msg("jobTemplate", "JobTemplateSpec"), 6: ptrNum("successfulJobsHistoryLimit"), 7: ptrNum("failedJobsHistoryLimit"), 8: str("timeZone")},
		"JobTemplateSpec": {1: msg("metadata", "ObjectMeta"), 2: msg("spec", "JobSpec")},

		// policy/v1, for kubectl create poddisruptionbudget.
		"PodDisruptionBudget":       {1: msg("metadata", "ObjectMeta"), 2: msg("spec", "PodDisruptionBudgetSpec"), 3: msg("status", "PodDisruptionBudgetStatus")},
		"PodDisruptionBudgetSpec":   {1: of("minAvailable", pbIntOrString), 2: msg("selector", "LabelSelector"), 3: of("maxUnavailable", pbIntOrString), 4: str("unhealthyPodEvictionPolicy")},
		"PodDisruptionBudgetStatus": {1: num("observedGeneration"), 3: num("disruptionsAllowed"), 4: num("currentHealthy"), 5: num("desiredHealthy"), 6: num("expectedPods")},

		"PodTemplateSpec": {1: msg("metadata", "ObjectMeta"), 2: msg("spec", "PodSpec")},
		"PodSpec": {2: msgs("containers", "Container"), 3: str("restartPolicy"), 4: ptrNum("terminationGracePeriodSeconds"),
			6: str("dnsPolicy"), 7: of("nodeSelector", pbStringMap), 8: str("serviceAccountName"), 10: str("nodeName"),
			11: boolean("hostNetwork"), 16: str("hostname"), 19: str("schedulerName"), 20: msgs("initContainers", "Container")},
		"Container": {1: str("name"), 2: str("image"), 3: strs("command"), 4: strs("args"), 5: str("workingDir"),
			6: msgs("ports", "ContainerPort"), 7: msgs("env", "EnvVar"), 8: msg("resources", "ResourceRequirements"),
			13: str("terminationMessagePath"), 14: str("imagePullPolicy"), 16: boolean("stdin"),
			18: boolean("tty"), 20: str("terminationMessagePolicy")},
		"ContainerPort":        {1: str("name"), 2: num("hostPort"), 3: num("containerPort"), 4: str("protocol"), 5: str("hostIP")},
		"EnvVar":               {1: str("name"), 2: str("value")},
		"ResourceRequirements": {1: of("limits", pbQuantityMap), 2: of("requests", pbQuantityMap)},

		// core/v1 ServiceAccount, rbac/v1, authentication/v1, authorization/v1.
		"ServiceAccount":              {1: msg("metadata", "ObjectMeta"), 2: msgs("secrets", "ObjectReference"), 3: msgs("imagePullSecrets", "LocalObjectReference"), 4: ptrBool("automountServiceAccountToken")},
		"ObjectReference":             {1: str("kind"), 2: str("namespace"), 3: str("name"), 4: str("uid"), 5: str("apiVersion"), 6: str("resourceVersion"), 7: str("fieldPath")},
		"LocalObjectReference":        {1: str("name")},
		"Role":                        {1: msg("metadata", "ObjectMeta"), 2: msgs("rules", "PolicyRule")},
		"ClusterRole":                 {1: msg("metadata", "ObjectMeta"), 2: msgs("rules", "PolicyRule"), 3: msg("aggregationRule", "AggregationRule")},
		"AggregationRule":             {1: msgs("clusterRoleSelectors", "LabelSelector")},
		"PolicyRule":                  {1: strs("verbs"), 2: strs("apiGroups"), 3: strs("resources"), 4: strs("resourceNames"), 5: strs("nonResourceURLs")},
		"RoleBinding":                 {1: msg("metadata", "ObjectMeta"), 2: msgs("subjects", "Subject"), 3: msg("roleRef", "RoleRef")},
		"ClusterRoleBinding":          {1: msg("metadata", "ObjectMeta"), 2: msgs("subjects", "Subject"), 3: msg("roleRef", "RoleRef")},
		"Subject":                     {1: str("kind"), 2: str("apiGroup"), 3: str("name"), 4: str("namespace")},
		"RoleRef":                     {1: str("apiGroup"), 2: str("kind"), 3: str("name")},
		"TokenRequest":                {1: msg("metadata", "ObjectMeta"), 2: msg("spec", "TokenRequestSpec"), 3: msg("status", "TokenRequestStatus")},
		"TokenRequestSpec":            {1: strs("audiences"), 3: msg("boundObjectRef", "BoundObjectReference"), 4: ptrNum("expirationSeconds")},
		"BoundObjectReference":        {1: str("kind"), 2: str("apiVersion"), 3: str("name"), 4: str("uid")},
		"TokenRequestStatus":          {1: str("token"), 2: of("expirationTimestamp", pbTime)},
		"SelfSubjectAccessReview":     {1: msg("metadata", "ObjectMeta"), 2: msg("spec", "SelfSubjectAccessReviewSpec"), 3: msg("status", "SubjectAccessReviewStatus")},
		"SelfSubjectAccessReviewSpec": {1: msg("resourceAttributes", "ResourceAttributes"), 2: msg("nonResourceAttributes", "NonResourceAttributes")},
		"ResourceAttributes":          {1: str("namespace"), 2: str("verb"), 3: str("group"), 4: str("version"), 5: str("resource"), 6: str("subresource"), 7: str("name")},
		"NonResourceAttributes":       {1: str("path"), 2: str("verb")},
		"SubjectAccessReviewStatus":   {1: boolean("allowed"), 2: str("reason"), 3: str("evaluationError"), 4: boolean("denied")},
		"SelfSubjectReview":           {1: msg("metadata", "ObjectMeta"), 2: msg("status", "SelfSubjectReviewStatus")},
		"SelfSubjectReviewStatus":     {1: msg("userInfo", "UserInfo")},
		"UserInfo":                    {1: str("username"), 2: str("uid"), 3: strs("groups")},
		"SelfSubjectRulesReview":      {1: msg("metadata", "ObjectMeta"), 2: msg("spec", "SelfSubjectRulesReviewSpec"), 3: msg("status", "SubjectRulesReviewStatus")},
		"SubjectRulesReviewStatus":    {1: msgs("resourceRules", "ResourceRule"), 2: msgs("nonResourceRules", "NonResourceRule"), 3: boolean("incomplete"), 4: str("evaluationError")},
		"ResourceRule":                {1: strs("verbs"), 2: strs("apiGroups"), 3: strs("resources"), 4: strs("resourceNames")},
		"NonResourceRule":             {1: strs("verbs"), 2: strs("nonResourceURLs")},
		"SelfSubjectRulesReviewSpec":  {1: str("namespace")},
	}
}

// protobufToJSON transcodes a Kubernetes protobuf body into JSON, with
// apiVersion and kind taken from its envelope.
func protobufToJSON(body []byte) ([]byte, error) {
	if len(body) < len(protobufMagic) || string(body[:len(protobufMagic)]) != string(protobufMagic) {
		return nil, api.NewBadRequest("the protobuf body does not start with the Kubernetes magic number")
	}
	// runtime.Unknown: typeMeta = 1 {apiVersion = 1, kind = 2}, raw = 2.
	var apiVersion, kind string
	var raw []byte
	err := walkProto(body[len(protobufMagic):], func(num uint64, wire int, v uint64, b []byte) error {
		switch {
		case num == 1 && wire == 2:
			return walkProto(b, func(num uint64, wire int, _ uint64, b []byte) error {
				if wire == 2 && num == 1 {
					apiVersion = string(b)
				} else if wire == 2 && num == 2 {
					kind = string(b)
				}
				return nil
			})
		case num == 2 && wire == 2:
			raw = b
		}
		return nil
	})
	if err != nil {
		return nil, api.NewBadRequest("malformed protobuf body: %v", err)
	}
	if !protobufKinds[kind] {
		return nil, api.NewStatusError(http.StatusUnsupportedMediaType, api.StatusReasonUnsupportedMediaType,
			"skiff reads protobuf bodies only for ConfigMap, Secret, Namespace, Deployment, Job, CronJob and PodDisruptionBudget, not %q; send application/json or application/yaml", kind)
	}
	obj, err := protobufTables().decode(kind, raw)
	if err != nil {
		var se *api.StatusError
		if errors.As(err, &se) {
			return nil, se
		}
		return nil, api.NewBadRequest("malformed protobuf %s: %v", kind, err)
	}
	obj["apiVersion"], obj["kind"] = apiVersion, kind
	return json.Marshal(obj)
}

// decode turns the message name, encoded in b, into a JSON-shaped map.
func (t pbMessages) decode(name string, b []byte) (map[string]any, error) {
	fields := t[name]
	out := map[string]any{}
	err := walkProto(b, func(num uint64, wire int, v uint64, data []byte) error {
		f, ok := fields[num]
		if !ok && v == 0 && len(data) == 0 {
			return nil // an empty field gogo-protobuf always writes (selfLink, hostPID, …)
		}
		if !ok {
			return api.NewStatusError(http.StatusUnsupportedMediaType, api.StatusReasonUnsupportedMediaType,
				"skiff does not read field %d of %s from protobuf; send application/json or application/yaml", num, name)
		}
		val, keep, err := t.value(f, wire, v, data)
		if err != nil || !keep {
			return err
		}
		if !f.ptr && !f.repeated && (val == "" || val == int64(0) || val == false) {
			return nil
		}
		switch {
		case f.repeated:
			list, _ := out[f.json].([]any)
			out[f.json] = append(list, val)
		case f.kind == pbStringMap || f.kind == pbBytesMap || f.kind == pbQuantityMap:
			m, _ := out[f.json].(map[string]any)
			if m == nil {
				m = map[string]any{}
				out[f.json] = m
			}
			entry := val.([2]any)
			m[entry[0].(string)] = entry[1]
		default:
			out[f.json] = val
		}
		return nil
	})
	return out, err
}

// value decodes one field occurrence; keep is false for an empty Time.
func (t pbMessages) value(f pbField, wire int, v uint64, data []byte) (any, bool, error) {
	wantWire := 2
	if f.kind == pbInt || f.kind == pbBool {
		wantWire = 0
	}
	if wire != wantWire {
		return nil, false, fmt.Errorf("field %s has wire type %d, want %d", f.json, wire, wantWire)
	}
	switch f.kind {
	case pbString:
		return string(data), true, nil
	case pbBytes:
		return data, true, nil
	case pbInt:
		return int64(v), true, nil
	case pbBool:
		return v != 0, true, nil
	case pbMessage:
		m, err := t.decode(f.msg, data)
		return m, true, err
	case pbTime:
		var secs, nanos int64
		err := walkProto(data, func(num uint64, wire int, v uint64, _ []byte) error {
			if wire == 0 && num == 1 {
				secs = int64(v)
			} else if wire == 0 && num == 2 {
				nanos = int64(int32(v))
			}
			return nil
		})
		if err != nil || (secs == 0 && nanos == 0) {
			return nil, false, err
		}
		return time.Unix(secs, nanos).UTC().Format(time.RFC3339), true, nil
	case pbIntOrString:
		var typ, intVal int64
		var strVal string
		err := walkProto(data, func(num uint64, wire int, v uint64, b []byte) error {
			switch {
			case num == 1 && wire == 0:
				typ = int64(v)
			case num == 2 && wire == 0:
				intVal = int64(int32(v))
			case num == 3 && wire == 2:
				strVal = string(b)
			}
			return nil
		})
		if typ == 1 {
			return strVal, true, err
		}
		return intVal, true, err
	case pbQuantity:
		return quantityString(data)
	}
	// Map entry: key = 1, value = 2.
	var key string
	var val any
	err := walkProto(data, func(num uint64, wire int, _ uint64, b []byte) error {
		if wire != 2 {
			return fmt.Errorf("map %s entry field %d has wire type %d", f.json, num, wire)
		}
		switch num {
		case 1:
			key = string(b)
		case 2:
			switch f.kind {
			case pbStringMap:
				val = string(b)
			case pbBytesMap:
				val = b
			default:
				q, _, err := quantityString(b)
				val = q
				return err
			}
		}
		return nil
	})
	if val == nil {
		switch f.kind {
		case pbStringMap:
			val = ""
		case pbBytesMap:
			val = []byte{}
		}
	}
	return [2]any{key, val}, true, err
}

// quantityString decodes resource.Quantity {string = 1}.
func quantityString(data []byte) (any, bool, error) {
	q := ""
	err := walkProto(data, func(num uint64, wire int, _ uint64, b []byte) error {
		if num == 1 && wire == 2 {
			q = string(b)
		}
		return nil
	})
	return q, true, err
}

// walkProto calls fn for each field of the protobuf message b: its
// number, wire type, varint value (wire 0) or bytes (wire 2). Fixed-width
// values (wire 1 and 5) are passed as varint values.
func walkProto(b []byte, fn func(num uint64, wire int, v uint64, data []byte) error) error {
	for len(b) > 0 {
		key, n := binary.Uvarint(b)
		if n <= 0 {
			return errors.New("bad field key")
		}
		b = b[n:]
		num, wire := key>>3, int(key&7)
		if num == 0 {
			return errors.New("field number 0")
		}
		var v uint64
		var data []byte
		switch wire {
		case 0:
			v, n = binary.Uvarint(b)
			if n <= 0 {
				return errors.New("bad varint")
			}
			b = b[n:]
		case 1:
			if len(b) < 8 {
				return errors.New("truncated fixed64")
			}
			v, b = binary.LittleEndian.Uint64(b), b[8:]
		case 2:
			l, n := binary.Uvarint(b)
			if n <= 0 || l > math.MaxInt32 || uint64(len(b)-n) < l {
				return errors.New("bad length")
			}
			data, b = b[n:n+int(l)], b[n+int(l):]
		case 5:
			if len(b) < 4 {
				return errors.New("truncated fixed32")
			}
			v, b = uint64(binary.LittleEndian.Uint32(b)), b[4:]
		default:
			return fmt.Errorf("unsupported wire type %d", wire)
		}
		if err := fn(num, wire, v, data); err != nil {
			return err
		}
	}
	return nil
}
