package agent_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skiffhq/skiff/agent/internal/agenttest"
	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/client"
	"github.com/skiffhq/skiff/api/resource"
)

// TestStatefulSetLocalVolumeRealContainerd: a StatefulSet pod on real
// containerd writes to its claim (a local-path volume the server
// provisions when the pod lands on the node), is deleted, comes back on
// the same node under the same name and reads its data; deleting the
// claim (reclaim Delete) removes the directory.
func TestStatefulSetLocalVolumeRealContainerd(t *testing.T) {
	srv := agenttest.StartServer(t)
	ta := startTestAgent(t, srv, nil)
	agenttest.Eventually(t, "node registered", ta.running.Registered)
	ctx := context.Background()

	one := int32(1)
	tmpl := busyboxPod("x", `if [ -f /data/stamp ]; then echo "found $(cat /data/stamp)"; else echo fresh; echo written-by-first > /data/stamp; fi; sleep 3600`)
	tmpl.Spec.NodeName = "edge" // the test server runs no scheduler
	grace := int64(1)           // sh as PID 1 ignores SIGTERM
	tmpl.Spec.TerminationGracePeriodSeconds = &grace
	tmpl.Spec.Containers[0].VolumeMounts = []api.VolumeMount{{Name: "data", MountPath: "/data"}}
	sts := &api.StatefulSet{
		ObjectMeta: api.ObjectMeta{Name: "db", Namespace: "default"},
		Spec: api.StatefulSetSpec{
			Replicas: &one, Selector: &api.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
			Template: api.PodTemplateSpec{ObjectMeta: api.ObjectMeta{Labels: map[string]string{"app": "db"}}, Spec: tmpl.Spec},
			VolumeClaimTemplates: []api.PersistentVolumeClaim{{ObjectMeta: api.ObjectMeta{Name: "data"},
				Spec: api.PersistentVolumeClaimSpec{AccessModes: []string{api.AccessReadWriteOnce},
					Resources: api.VolumeResourceRequirements{Requests: api.ResourceList{api.ResourceStorage: resource.MustParse("64Mi")}}}}},
		},
	}
	api.SetTypeMeta(sts)
	if _, err := srv.Admin.Create(ctx, sts); err != nil {
		t.Fatal(err)
	}
	first := waitPod(t, srv, "db-0", "Running", phase(api.PodRunning))
	agenttest.Eventually(t, "fresh in the first log", func() bool { return strings.Contains(logsOf(t, srv, "db-0", ""), "fresh") })

	claims, _ := api.LookupResource("persistentvolumeclaims")
	obj, err := srv.Admin.Get(ctx, claims, "default", "data-db-0")
	if err != nil {
		t.Fatal(err)
	}
	claim := obj.(*api.PersistentVolumeClaim)
	if claim.Status.Phase != api.ClaimBound || claim.Spec.VolumeName != "pvc-"+claim.UID {
		t.Fatalf("claim = %s bound to %q; want Bound to pvc-%s", claim.Status.Phase, claim.Spec.VolumeName, claim.UID)
	}
	dir := filepath.Join(ta.cfg.DataDir, "agent", "volumes", api.LocalPathDir(claim.Spec.VolumeName, "default", "data-db-0"))
	agenttest.Eventually(t, "the stamp on the node", func() bool {
		b, err := os.ReadFile(filepath.Join(dir, "stamp"))
		return err == nil && string(b) == "written-by-first\n"
	})

	// The pod goes; the StatefulSet brings it back, on the same node,
	// with the same data.
	if err := srv.Admin.Delete(ctx, agenttest.Pods(), "default", "db-0", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	second := waitPod(t, srv, "db-0", "a new db-0 Running", func(p *api.Pod) bool { return p.UID != first.UID && p.Status.Phase == api.PodRunning })
	if second.Spec.NodeName != first.Spec.NodeName {
		t.Errorf("db-0 came back on %s; want %s", second.Spec.NodeName, first.Spec.NodeName)
	}
	agenttest.Eventually(t, "found in the second log", func() bool {
		return strings.Contains(logsOf(t, srv, "db-0", ""), "found written-by-first")
	})

	// Scale to zero, delete the claim: its volume is deleted (reclaim
	// Delete) and the agent removes the directory.
	sets, _ := api.LookupResource("statefulsets")
	if _, err := srv.Admin.Patch(ctx, sets, "default", "db", "application/merge-patch+json", []byte(`{"spec":{"replicas":0}}`)); err != nil {
		t.Fatal(err)
	}
	agenttest.Eventually(t, "db-0 gone", func() bool {
		_, err := srv.Admin.Get(ctx, agenttest.Pods(), "default", "db-0")
		return api.IsNotFound(err)
	})
	if err := srv.Admin.Delete(ctx, claims, "default", "data-db-0", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	agenttest.Eventually(t, "the volume directory removed", func() bool {
		_, err := os.Stat(dir)
		return os.IsNotExist(err)
	})
}
