package apiserver

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"reflect"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/deepcopy"
	"github.com/skiffhq/skiff/internal/uid"
)

// This file holds the create and update strategies: what the server fills
// in, resets or keeps when a client writes an object, per kind.

// prepareForCreate fills server-owned metadata and resets what a client may
// not set on create (status of workloads and pods).
func prepareForCreate(obj api.Object, now time.Time) {
	m := obj.GetObjectMeta()
	m.UID = newUID()
	m.CreationTimestamp = api.NewTime(now)
	m.ResourceVersion = ""
	m.DeletionTimestamp = nil
	m.DeletionGracePeriodSeconds = nil
	m.Generation = 1
	switch o := obj.(type) {
	case *api.Pod:
		o.Status = api.PodStatus{Phase: api.PodPending}
	case *api.Deployment:
		o.Status = api.DeploymentStatus{}
	case *api.DaemonSet:
		o.Status = api.DaemonSetStatus{}
	case *api.ReplicaSet:
		o.Status = api.ReplicaSetStatus{}
	case *api.Job:
		o.Status = api.JobStatus{}
	case *api.CronJob:
		o.Status = api.CronJobStatus{}
	case *api.PodDisruptionBudget:
		o.Status = api.PodDisruptionBudgetStatus{}
	case *api.StatefulSet:
		o.Status = api.StatefulSetStatus{}
	case *api.PersistentVolumeClaim:
		o.Status = api.PersistentVolumeClaimStatus{}
	case *api.PersistentVolume:
		o.Status = api.PersistentVolumeStatus{}
	case *api.Namespace:
		o.Status = api.NamespaceStatus{}
	case *api.Service:
		o.Status = api.ServiceStatus{}
	case *api.Secret:
		mergeStringData(o)
	}
	api.SetTypeMeta(obj)
}

// prepareForUpdate returns the object to store when a client writes next
// over cur. A main-resource write keeps cur's status; a status write keeps
// everything of cur but the status. Server-owned metadata always comes from
// cur. next is not modified.
func prepareForUpdate(next, cur api.Object, sub string) (api.Object, error) {
	var out api.Object
	if sub == "status" {
		c, err := deepCopy(cur)
		if err != nil {
			return nil, err
		}
		copyStatus(c, next)
		out = c
	} else {
		n, err := deepCopy(next)
		if err != nil {
			return nil, err
		}
		copyStatus(n, cur)
		if s, ok := n.(*api.Secret); ok {
			mergeStringData(s)
		}
		// Defaults first, so that re-sending the manifest a client
		// applied (without the defaulted fields) is not a spec change.
		api.SetDefaults(n)
		out = n
		if specChanged(n, cur) {
			out.GetObjectMeta().Generation = cur.GetObjectMeta().Generation + 1
		} else {
			out.GetObjectMeta().Generation = cur.GetObjectMeta().Generation
		}
	}
	om, cm := out.GetObjectMeta(), cur.GetObjectMeta()
	om.UID = cm.UID
	om.CreationTimestamp = cm.CreationTimestamp
	om.DeletionTimestamp = cm.DeletionTimestamp
	om.DeletionGracePeriodSeconds = cm.DeletionGracePeriodSeconds
	om.ResourceVersion = cm.ResourceVersion
	if sub == "" && om.Generation == 0 {
		om.Generation = cm.Generation
	}
	api.SetTypeMeta(out)
	return out, nil
}

// copyStatus sets dst's status to src's (same kind). Kinds without status
// are left alone.
func copyStatus(dst, src api.Object) {
	switch d := dst.(type) {
	case *api.Pod:
		d.Status = src.(*api.Pod).Status
	case *api.Node:
		d.Status = src.(*api.Node).Status
	case *api.Namespace:
		d.Status = src.(*api.Namespace).Status
	case *api.Deployment:
		d.Status = src.(*api.Deployment).Status
	case *api.DaemonSet:
		d.Status = src.(*api.DaemonSet).Status
	case *api.ReplicaSet:
		d.Status = src.(*api.ReplicaSet).Status
	case *api.Job:
		d.Status = src.(*api.Job).Status
	case *api.CronJob:
		d.Status = src.(*api.CronJob).Status
	case *api.Service:
		d.Status = src.(*api.Service).Status
	case *api.PodDisruptionBudget:
		d.Status = src.(*api.PodDisruptionBudget).Status
	case *api.StatefulSet:
		d.Status = src.(*api.StatefulSet).Status
	case *api.PersistentVolumeClaim:
		d.Status = src.(*api.PersistentVolumeClaim).Status
	case *api.PersistentVolume:
		d.Status = src.(*api.PersistentVolume).Status
	}
}

// specChanged reports whether the "spec" of a and b differ.
func specChanged(a, b api.Object) bool {
	sa, sb := specJSON(a), specJSON(b)
	return sa == nil || sb == nil || !reflect.DeepEqual(sa, sb)
}

func specJSON(o api.Object) any {
	var spec any
	switch x := o.(type) {
	case *api.Pod:
		spec = x.Spec
	case *api.Node:
		spec = x.Spec
	case *api.Deployment:
		spec = x.Spec
	case *api.DaemonSet:
		spec = x.Spec
	case *api.ReplicaSet:
		spec = x.Spec
	case *api.Job:
		spec = x.Spec
	case *api.CronJob:
		spec = x.Spec
	case *api.PodDisruptionBudget:
		spec = x.Spec
	case *api.StatefulSet:
		spec = x.Spec
	case *api.PersistentVolumeClaim:
		spec = x.Spec
	case *api.PersistentVolume:
		spec = x.Spec
	case *api.Namespace:
		spec = x.Spec
	case *api.Service:
		spec = x.Spec
	default:
		return struct{}{}
	}
	b, err := json.Marshal(spec)
	if err != nil {
		return nil
	}
	var v any
	if json.Unmarshal(b, &v) != nil {
		return nil
	}
	return v
}

func mergeStringData(s *api.Secret) {
	if len(s.StringData) == 0 {
		s.StringData = nil
		return
	}
	if s.Data == nil {
		s.Data = map[string][]byte{}
	}
	for k, v := range s.StringData {
		s.Data[k] = []byte(v)
	}
	s.StringData = nil
}

// deepCopy copies obj: the types are plain data (see internal/deepcopy).
// It was a JSON round trip, one in every update and status write.
func deepCopy(obj api.Object) (api.Object, error) {
	if _, ok := api.ResourceOf(obj); !ok {
		return nil, fmt.Errorf("deep copy: unknown type %T", obj)
	}
	return deepcopy.Value(obj), nil
}

// newUID returns a random RFC 4122 version 4 UUID.
func newUID() string { return uid.New() }

// generatedName appends five random characters to prefix, from the same
// alphabet Kubernetes uses (no vowels, no look-alikes).
func generatedName(prefix string) string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	var b [5]byte
	rand.Read(b[:])
	out := []byte(prefix)
	for _, c := range b {
		out = append(out, alphabet[int(c)%len(alphabet)])
	}
	return string(out)
}
