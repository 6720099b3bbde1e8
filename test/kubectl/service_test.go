package kubectl

import (
	"strings"
	"testing"
)

// appManifest is a Deployment and its Service in one file, the shape of
// almost every real application manifest.
func appManifest(ns string) string {
	return deploymentYAML(ns, "app", 2, "nginx:1.27") + `---
apiVersion: v1
kind: Service
metadata:
  name: app
  namespace: ` + ns + `
spec:
  type: NodePort
  selector: {app: app}
  ports:
  - name: http
    port: 80
    targetPort: 80
  - name: metrics
    port: 9100
    protocol: UDP
`
}

// TestServicesWithKubectl applies a Deployment plus a Service with plain
// kubectl apply (client-side validation against skiff's OpenAPI), reads
// Services, Endpoints and EndpointSlices as tables, describes a Service,
// exposes a Deployment and asks for cluster-info.
func TestServicesWithKubectl(t *testing.T) {
	t.Parallel()
	c := start(t)
	ns := c.namespace(t)
	out := c.stdinOK(t, appManifest(ns), "apply", "-f", "-")
	if !strings.Contains(out, "deployment.apps/app created") || !strings.Contains(out, "service/app created") {
		t.Fatalf("kubectl apply = %q; want the Deployment and the Service created", out)
	}
	// Applying the same file again changes nothing and still validates.
	if out := c.stdinOK(t, appManifest(ns), "apply", "-f", "-"); !strings.Contains(out, "service/app unchanged") {
		t.Errorf("second kubectl apply = %q; want service/app unchanged", out)
	}

	// This suite runs no controllers, so the kubernetes Service (whose
	// endpoints the API server writes itself) shows all three tables.
	out = squash(c.ok(t, "get", "svc,ep,endpointslices", "-n", "default"))
	for _, want := range []string{
		"NAME TYPE CLUSTER-IP EXTERNAL-IP PORT(S) AGE", "service/kubernetes ClusterIP 10.43.0.1 <none> 443/TCP",
		"NAME ENDPOINTS AGE", "endpoints/kubernetes ",
		"NAME ADDRESSTYPE PORTS ENDPOINTS AGE", "endpointslice.discovery.k8s.io/kubernetes IPv4 ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("get svc,ep,endpointslices lacks %q:\n%s", want, out)
		}
	}
	row := rows(c.ok(t, "get", "svc", "app", "-n", ns, "-o", "wide"))
	if len(row) != 1 || !strings.HasPrefix(row[0], "app NodePort 10.43.") || !strings.Contains(row[0], "<none> 80:3") ||
		!strings.Contains(row[0], "/TCP,9100:3") || !strings.HasSuffix(row[0], " app=app") {
		t.Errorf("get svc -o wide row = %q; want NodePort, a 10.43 address, node ports and the selector", row)
	}
	if got := header(c.ok(t, "get", "svc", "app", "-n", ns, "-o", "wide")); got != "NAME TYPE CLUSTER-IP EXTERNAL-IP PORT(S) AGE SELECTOR" {
		t.Errorf("get svc -o wide header = %q", got)
	}
	out = c.ok(t, "describe", "svc", "app", "-n", ns)
	for _, want := range []string{"Name:", "app", "Selector:", "app=app", "Type:", "NodePort", "IP:", "10.43.", "Port:", "http  80/TCP", "TargetPort:", "NodePort:", "Endpoints:", "Session Affinity:", "None"} {
		if !strings.Contains(out, want) {
			t.Errorf("describe svc lacks %q:\n%s", want, out)
		}
	}

	out = c.ok(t, "expose", "deploy/app", "--port", "8080", "--target-port", "80", "--name", "app-exposed", "-n", ns)
	if !strings.Contains(out, "service/app-exposed exposed") {
		t.Errorf("kubectl expose = %q; want service/app-exposed exposed", out)
	}
	if got := c.ok(t, "get", "svc", "app-exposed", "-n", ns, "-o", "jsonpath={.spec.selector.app} {.spec.ports[0].port} {.spec.clusterIP}"); !strings.HasPrefix(got, "app 8080 10.43.") {
		t.Errorf("exposed service = %q; want selector app, port 8080 and a cluster IP", got)
	}

	out = c.ok(t, "cluster-info")
	if !strings.Contains(out, "Kubernetes control plane") || !strings.Contains(out, "is running at https://") {
		t.Errorf("cluster-info = %q", out)
	}
	if got := c.ok(t, "get", "svc", "kubernetes", "-n", "default", "-o", "jsonpath={.spec.clusterIP}"); got != "10.43.0.1" {
		t.Errorf("kubernetes service clusterIP = %q; want 10.43.0.1", got)
	}

	// A taken node port is refused with 422 naming the field.
	np := c.ok(t, "get", "svc", "app", "-n", ns, "-o", "jsonpath={.spec.ports[0].nodePort}")
	clash := strings.Replace(appManifest(ns), "name: app\n  namespace: "+ns+"\nspec:\n  type: NodePort", "name: clash\n  namespace: "+ns+"\nspec:\n  type: NodePort", 1)
	clash = clash[strings.Index(clash, "apiVersion: v1"):]
	clash = strings.Replace(clash, "targetPort: 80\n", "targetPort: 80\n    nodePort: "+np+"\n", 1)
	if out := c.fails(t, clash, "apply", "-f", "-"); !strings.Contains(out, "spec.ports[0].nodePort") || !strings.Contains(out, "already allocated") {
		t.Errorf("apply with a taken node port = %q; want a 422 naming spec.ports[0].nodePort", out)
	}
}

// squash joins every run of blanks in s into one space.
func squash(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.Join(strings.Fields(l), " ")
	}
	return strings.Join(lines, "\n")
}

// TestSharedServiceManifestsApply applies the Kubernetes documentation's
// Deployment-plus-Service examples with plain kubectl apply.
func TestSharedServiceManifestsApply(t *testing.T) {
	t.Parallel()
	c := start(t)
	ns := c.namespace(t)
	for _, f := range []string{"run-my-nginx.yaml", "nginx-svc.yaml"} {
		out := c.ok(t, "apply", "-n", ns, "-f", "../../../shared/manifests/"+f)
		if !strings.Contains(out, "created") {
			t.Errorf("kubectl apply -f %s = %q; want created", f, out)
		}
	}
	if got := c.ok(t, "get", "svc", "my-nginx", "-n", ns, "-o", "jsonpath={.spec.type} {.spec.ports[0].targetPort}"); got != "ClusterIP 80" {
		t.Errorf("my-nginx service = %q; want ClusterIP with targetPort 80", got)
	}
}
