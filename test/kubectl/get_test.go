package kubectl

import (
	"slices"
	"strings"
	"testing"
)

// TestAPIResources checks discovery as kubectl api-resources and
// api-versions show it: every kind with Kubernetes' short names and scope.
func TestAPIResources(t *testing.T) {
	t.Parallel()
	c := start(t)
	out := c.ok(t, "api-resources")
	if got, want := header(out), "NAME SHORTNAMES APIVERSION NAMESPACED KIND"; got != want {
		t.Errorf("api-resources header = %q; want %q", got, want)
	}
	got := rows(out)
	for _, want := range []string{
		"configmaps cm v1 true ConfigMap",
		"events ev v1 true Event",
		"namespaces ns v1 false Namespace",
		"nodes no v1 false Node",
		"pods po v1 true Pod",
		"secrets v1 true Secret",
		"daemonsets ds apps/v1 true DaemonSet",
		"deployments deploy apps/v1 true Deployment",
		"services svc v1 true Service",
		"endpoints ep v1 true Endpoints",
		"endpointslices discovery.k8s.io/v1 true EndpointSlice",
		"serviceaccounts sa v1 true ServiceAccount",
		"clusterrolebindings rbac.authorization.k8s.io/v1 false ClusterRoleBinding",
		"rolebindings rbac.authorization.k8s.io/v1 true RoleBinding",
		"selfsubjectaccessreviews authorization.k8s.io/v1 false SelfSubjectAccessReview",
		"selfsubjectreviews authentication.k8s.io/v1 false SelfSubjectReview",
		"replicasets rs apps/v1 true ReplicaSet",
		"jobs batch/v1 true Job",
		"cronjobs cj batch/v1 true CronJob",
	} {
		if !slices.Contains(got, want) {
			t.Errorf("api-resources lacks row %q; rows: %q", want, got)
		}
	}
	if out := strings.Fields(c.ok(t, "api-versions")); !slices.Contains(out, "apps/v1") || !slices.Contains(out, "batch/v1") || !slices.Contains(out, "v1") {
		t.Errorf("api-versions = %q; want apps/v1, batch/v1 and v1 among them", out)
	}
	all := strings.Fields(c.ok(t, "api-resources", "--categories=all", "-o", "name"))
	for _, want := range []string{"pods", "daemonsets.apps", "deployments.apps", "replicasets.apps", "cronjobs.batch", "jobs.batch"} {
		if !slices.Contains(all, want) {
			t.Errorf("api-resources --categories=all = %q; want %s among them", all, want)
		}
	}
	if !slices.Contains(all, "services") || !slices.Contains(strings.Fields(c.ok(t, "api-versions")), "rbac.authorization.k8s.io/v1") {
	}
	if !slices.Contains(strings.Fields(c.ok(t, "api-versions")), "metrics.k8s.io/v1beta1") {
		t.Errorf("api-versions lacks metrics.k8s.io/v1beta1")
		t.Errorf("want services among all and the rbac group")
	}
}

// kindCase is one kind with an object of it and the headers Kubernetes
// prints for it.
type kindCase struct {
	resource string // as typed on the command line
	name     string
	wide     bool   // -o wide adds columns
	header   string // kubectl get
	wideHdr  string // kubectl get -o wide
	kind     string
}

// seedEveryKind creates one object of every kind in a new namespace and
// returns the namespace and the cases.
func seedEveryKind(t *testing.T, c *cluster) (string, []kindCase) {
	ns := c.namespace(t)
	node := ns + "-node"
	manifests := []string{
		nodeYAML(node), podYAML(ns, "pod-a", ""), deploymentYAML(ns, "deploy-a", 2, "nginx:1.27"),
		daemonSetYAML(ns, "ds-a"), configMapYAML(ns, "cm-a"), secretYAML(ns, "secret-a"), eventYAML(ns, "event-a", "pod-a", ""),
		replicaSetYAML(ns, "rs-a"), jobYAML(ns, "job-a"), cronJobYAML(ns, "cj-a"), statefulSetYAML(ns, "sts-a"), claimYAML(ns, "pvc-a"),
	}
	c.stdinOK(t, strings.Join(manifests, "---\n"), "create", "-f", "-")
	return ns, []kindCase{
		{"pods", "pod-a", true, "NAME READY STATUS RESTARTS AGE", "NAME READY STATUS RESTARTS AGE IP NODE NOMINATED NODE READINESS GATES", "Pod"},
		{"nodes", node, true, "NAME STATUS ROLES AGE VERSION", "NAME STATUS ROLES AGE VERSION INTERNAL-IP EXTERNAL-IP OS-IMAGE KERNEL-VERSION CONTAINER-RUNTIME", "Node"},
		{"deployments", "deploy-a", true, "NAME READY UP-TO-DATE AVAILABLE AGE", "NAME READY UP-TO-DATE AVAILABLE AGE CONTAINERS IMAGES SELECTOR", "Deployment"},
		{"daemonsets", "ds-a", true, "NAME DESIRED CURRENT READY UP-TO-DATE AVAILABLE NODE SELECTOR AGE", "NAME DESIRED CURRENT READY UP-TO-DATE AVAILABLE NODE SELECTOR AGE CONTAINERS IMAGES SELECTOR", "DaemonSet"},
		{"configmaps", "cm-a", false, "NAME DATA AGE", "", "ConfigMap"},
		{"secrets", "secret-a", false, "NAME TYPE DATA AGE", "", "Secret"},
		{"namespaces", ns, false, "NAME STATUS AGE", "", "Namespace"},
		{"replicasets", "rs-a", true, "NAME DESIRED CURRENT READY AGE", "NAME DESIRED CURRENT READY AGE CONTAINERS IMAGES SELECTOR", "ReplicaSet"},
		{"jobs", "job-a", true, "NAME STATUS COMPLETIONS DURATION AGE", "NAME STATUS COMPLETIONS DURATION AGE CONTAINERS IMAGES SELECTOR", "Job"},
		{"statefulsets", "sts-a", true, "NAME READY AGE", "NAME READY AGE CONTAINERS IMAGES", "StatefulSet"},
		{"persistentvolumeclaims", "pvc-a", true, "NAME STATUS VOLUME CAPACITY ACCESS MODES STORAGECLASS VOLUMEATTRIBUTESCLASS AGE", "NAME STATUS VOLUME CAPACITY ACCESS MODES STORAGECLASS VOLUMEATTRIBUTESCLASS AGE VOLUMEMODE", "PersistentVolumeClaim"},
		{"storageclasses", "local-path", false, "NAME PROVISIONER RECLAIMPOLICY VOLUMEBINDINGMODE ALLOWVOLUMEEXPANSION AGE", "", "StorageClass"},
		{"cronjobs", "cj-a", true, "NAME SCHEDULE TIMEZONE SUSPEND ACTIVE LAST SCHEDULE AGE", "NAME SCHEDULE TIMEZONE SUSPEND ACTIVE LAST SCHEDULE AGE CONTAINERS IMAGES SELECTOR", "CronJob"},
		{"events", "event-a", true, "LAST SEEN TYPE REASON OBJECT MESSAGE", "LAST SEEN TYPE REASON OBJECT SUBOBJECT SOURCE MESSAGE FIRST SEEN COUNT NAME", "Event"},
	}
}

// TestGetStructuredOutput gets every kind as YAML, JSON and names, by
// plural, short name and kind.
func TestGetStructuredOutput(t *testing.T) {
	t.Parallel()
	c := start(t)
	ns, cases := seedEveryKind(t, c)
	for _, tc := range cases {
		obj := decode(t, c.ok(t, "get", tc.resource, tc.name, "-n", ns, "-o", "yaml"))
		if field(obj, "kind") != tc.kind || field(obj, "metadata.name") != tc.name {
			t.Errorf("get %s %s -o yaml: kind %v name %v; want %s %s", tc.resource, tc.name, field(obj, "kind"), field(obj, "metadata.name"), tc.kind, tc.name)
		}
		list := decode(t, c.ok(t, "get", tc.resource, "-n", ns, "-o", "json"))
		items, _ := field(list, "items").([]any)
		found := false
		for _, it := range items {
			if m, ok := it.(map[string]any); ok && field(m, "metadata.name") == tc.name && field(m, "kind") == tc.kind {
				found = true
			}
		}
		if field(list, "kind") != "List" || !found {
			t.Errorf("get %s -o json: kind %v, %s %q among %d items: %v; want a List holding it", tc.resource, field(list, "kind"), tc.kind, tc.name, len(items), found)
		}
	}
	got := c.ok(t, "get", "po,deploy,ds,cm", "-n", ns, "-o", "name")
	want := "pod/pod-a\ndeployment.apps/deploy-a\ndaemonset.apps/ds-a\nconfigmap/cm-a\n"
	if got != want {
		t.Errorf("get po,deploy,ds,cm -o name = %q; want %q", got, want)
	}
	if got, want := c.ok(t, "get", "all", "-n", ns, "-o", "name"), "pod/pod-a\ndaemonset.apps/ds-a\ndeployment.apps/deploy-a\nreplicaset.apps/rs-a\nstatefulset.apps/sts-a\ncronjob.batch/cj-a\njob.batch/job-a\n"; got != want {
		t.Errorf("get all -o name = %q; want %q", got, want)
	}
	if got := c.ok(t, "get", "pod", "pod-a", "-n", ns, "-o", "jsonpath={.spec.containers[0].image}"); got != "busybox:1.36" {
		t.Errorf("get pod -o jsonpath = %q; want busybox:1.36", got)
	}
	if got := c.ok(t, "get", "pods", "-n", ns, "-l", "app=pod-a", "-o", "name"); got != "pod/pod-a\n" {
		t.Errorf("get pods -l app=pod-a = %q; want pod/pod-a", got)
	}
	if got := c.ok(t, "get", "pods", "-n", ns, "--field-selector", "metadata.name=nope", "-o", "name"); got != "" {
		t.Errorf("get pods --field-selector metadata.name=nope = %q; want nothing", got)
	}
}

// TestGetTableHeaders checks kubectl get and get -o wide print Kubernetes'
// own columns for every kind. It needs server-side Tables (as=Table).
func TestGetTableHeaders(t *testing.T) {
	t.Parallel()
	c := start(t)
	ns, cases := seedEveryKind(t, c)
	for _, tc := range cases {
		out := c.ok(t, "get", tc.resource, tc.name, "-n", ns)
		if got := header(out); got != tc.header {
			t.Errorf("get %s header = %q; want %q", tc.resource, got, tc.header)
		}
		if rs := rows(out); tc.resource != "events" && (len(rs) != 1 || !strings.HasPrefix(rs[0], tc.name+" ")) {
			t.Errorf("get %s %s rows = %q; want one row starting with the name", tc.resource, tc.name, rs)
		}
		if tc.wide {
			if got := header(c.ok(t, "get", tc.resource, tc.name, "-n", ns, "-o", "wide")); got != tc.wideHdr {
				t.Errorf("get %s -o wide header = %q; want %q", tc.resource, got, tc.wideHdr)
			}
		}
	}
	out := c.ok(t, "get", "pods", "-A")
	if got, want := header(out), "NAMESPACE NAME READY STATUS RESTARTS AGE"; got != want {
		t.Errorf("get pods -A header = %q; want %q", got, want)
	}
	if got := c.ok(t, "get", "pods", "-n", ns, "--no-headers"); !strings.HasPrefix(strings.Join(strings.Fields(got), " "), "pod-a 0/1 Pending 0 ") {
		t.Errorf("get pods --no-headers = %q; want pod-a 0/1 Pending 0 …", got)
	}
	if got := c.run(t, "", nil, "get", "pods", "-n", ns+"-empty"); !strings.Contains(got.stderr, "No resources found in "+ns+"-empty namespace.") {
		t.Errorf("get pods in an empty namespace: stderr %q; want No resources found", got.stderr)
	}
}
