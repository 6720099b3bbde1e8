package dashboard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/client"
	"github.com/skiffhq/skiff/internal/clock"
)

// createObj creates a manifest through the API and returns what the server
// stored (with its uid).
func createObj(t *testing.T, c *client.Client, manifest string) api.Object {
	t.Helper()
	obj, err := api.DecodeObject([]byte(manifest))
	if err != nil {
		t.Fatalf("fixture: %v\n%s", err, manifest)
	}
	got, err := c.Create(context.Background(), obj)
	if err != nil {
		t.Fatalf("create %s: %v", obj.GetObjectMeta().Name, err)
	}
	return got
}

func resource(t *testing.T, name string) api.ResourceInfo {
	t.Helper()
	r, ok := api.LookupResource(name)
	if !ok {
		t.Fatalf("the API has no resource %s", name)
	}
	return r
}

// getObj reads an object through the API and decodes it into out.
func getObj(t *testing.T, c *client.Client, res, ns, name string, out any) {
	t.Helper()
	b, err := c.GetRaw(context.Background(), resource(t, res), ns, name)
	if err != nil {
		t.Fatalf("get %s %s/%s: %v", res, ns, name, err)
	}
	if err := json.Unmarshal(b, out); err != nil { // out must be fresh: omitted fields stay as they were
		t.Fatal(err)
	}
}

// detailFixtures creates one object of every kind with a detail page, in
// default, with what belongs to it: the Deployment's two ReplicaSets
// (revisions 1 and 2), pods, a Service's Endpoints, events. The server
// runs no controllers, so the test writes what they would.
func detailFixtures(t *testing.T, c *client.Client) {
	t.Helper()
	tmpl := func(app, image string, extra string) string {
		return fmt.Sprintf(`"template":{"metadata":{"labels":{"app":%q%s}},"spec":{"containers":[{"name":"c","image":%q}]}}`, app, extra, image)
	}
	dep := createObj(t, c, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"default","annotations":{"kubernetes.io/change-cause":"image 1.27"}},
		"spec":{"replicas":2,"selector":{"matchLabels":{"app":"web"}},`+tmpl("web", "nginx:1.27", "")+`}}`)
	owner := func(kind, name string, uid string) string {
		return fmt.Sprintf(`"ownerReferences":[{"apiVersion":"apps/v1","kind":%q,"name":%q,"uid":%q,"controller":true}]`, kind, name, uid)
	}
	for i, img := range []string{"nginx:1.26", "nginx:1.27"} {
		hash := []string{"aaa", "bbb"}[i]
		createObj(t, c, fmt.Sprintf(`{"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{"name":"web-%s","namespace":"default","labels":{"app":"web","pod-template-hash":%q},
			"annotations":{"deployment.kubernetes.io/revision":"%d","kubernetes.io/change-cause":"image %s"},%s},
			"spec":{"replicas":%d,"selector":{"matchLabels":{"app":"web","pod-template-hash":%q}},%s}}`,
			hash, hash, i+1, img[6:], owner("Deployment", "web", dep.GetObjectMeta().UID), 2*i, hash, tmpl("web", img, `,"pod-template-hash":"`+hash+`"`)))
	}
	for _, m := range []string{
		`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-bbb-1","namespace":"default","labels":{"app":"web","pod-template-hash":"bbb"}},"spec":{"nodeName":"edge-1","containers":[{"name":"c","image":"nginx:1.27"}]}}`,
		`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"other","namespace":"default","labels":{"app":"other"}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}`,
		`{"apiVersion":"v1","kind":"Event","metadata":{"name":"web.1","namespace":"default"},"involvedObject":{"kind":"Deployment","namespace":"default","name":"web","apiVersion":"apps/v1"},"reason":"ScalingReplicaSet","message":"Scaled up replica set web-bbb to 2","type":"Normal","count":1}`,
		`{"apiVersion":"v1","kind":"Event","metadata":{"name":"web.2","namespace":"default"},"involvedObject":{"kind":"Service","namespace":"default","name":"web","apiVersion":"v1"},"reason":"NotTheDeployments","message":"an event of the Service of the same name","type":"Warning","count":1}`,
		`{"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":"agentd","namespace":"default"},"spec":{"selector":{"matchLabels":{"app":"agentd"}},` + tmpl("agentd", "busybox:1.36", "") + `}}`,
		`{"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"name":"db","namespace":"default"},"spec":{"replicas":1,"serviceName":"db","selector":{"matchLabels":{"app":"db"}},` + tmpl("db", "postgres:16", "") + `}}`,
		`{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"once","namespace":"default"},"spec":{"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox:1.36","command":["true"]}]}}}}`,
		`{"apiVersion":"batch/v1","kind":"CronJob","metadata":{"name":"nightly","namespace":"default"},"spec":{"schedule":"0 3 * * *","jobTemplate":{"metadata":{"labels":{"job":"nightly"}},"spec":{"template":{"spec":{"restartPolicy":"OnFailure","containers":[{"name":"c","image":"busybox:1.36","command":["true"]}]}}}}}}`,
		`{"apiVersion":"v1","kind":"Service","metadata":{"name":"web","namespace":"default"},"spec":{"selector":{"app":"web"},"ports":[{"name":"http","port":80,"targetPort":8080}]}}`,
		`{"apiVersion":"v1","kind":"Endpoints","metadata":{"name":"web","namespace":"default"},"subsets":[{"addresses":[{"ip":"10.42.0.7","nodeName":"edge-1","targetRef":{"kind":"Pod","namespace":"default","name":"web-bbb-1"}}],"ports":[{"name":"http","port":8080,"protocol":"TCP"}]}]}`,
		`{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"data","namespace":"default"},"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}}`,
		`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"db-0","namespace":"default","labels":{"app":"db"}},"spec":{"containers":[{"name":"c","image":"postgres:16"}],"volumes":[{"name":"d","persistentVolumeClaim":{"claimName":"data"}}]}}`,
	} {
		createObj(t, c, m)
	}
	// The status a Deployment controller would write.
	if _, err := c.PatchStatus(context.Background(), resource(t, "deployments"), "default", "web", client.MergePatchType, []byte(`{"status":{"replicas":2,"readyReplicas":1,"updatedReplicas":2,
		"conditions":[{"type":"Available","status":"False","reason":"MinimumReplicasUnavailable","message":"Deployment does not have minimum availability."}]}}`)); err != nil {
		t.Fatal(err)
	}
}

// TestDetailPagesInRealBrowser opens the page of each kind and uses its
// actions: scale, pause, restart and roll back a Deployment, run a CronJob
// now and suspend it, delete a Service after a cancelled first try. The
// API, not the page, says whether each action happened.
func TestDetailPagesInRealBrowser(t *testing.T) {
	chromium := findChromium(t)
	srv, admin := startServer(t, clock.NewFake(time.Now()))
	info := srv.info
	token, err := os.ReadFile(info.AdminTokenPath)
	if err != nil {
		t.Fatal(err)
	}
	detailFixtures(t, admin)
	ctx, problems := startBrowser(t, chromium)
	p := &page{t: t, ctx: ctx, dir: artifactDir(t)}
	t.Logf("screenshots in %s", p.dir)
	p.do("open the dashboard", chromedp.Navigate(info.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#token")))
	p.do("log in", chromedp.SendKeys(chromedp.CSS("#token"), strings.TrimSpace(string(token))), chromedp.Click(chromedp.CSS("#login-submit")),
		chromedp.WaitVisible(chromedp.CSS(`#conn[data-state="live"]`)))

	// The workloads list links to the Deployment's page.
	p.goTo("#/workloads", `a[href="#/deployments/default/web"]`)
	p.click(`a[href="#/deployments/default/web"]`)
	p.do("see the Deployment's page", chromedp.WaitVisible(chromedp.CSS(`section.detail[data-kind="Deployment"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#rollback-1`)), chromedp.WaitVisible(chromedp.Search(`//td[contains(., "ScalingReplicaSet")]`)))
	body := p.text("main")
	for _, want := range []string{"1/2", "MinimumReplicasUnavailable", "web-bbb-1", "2 (current)", "image 1.26", "ScalingReplicaSet", "kind: Deployment", "image: nginx:1.27"} {
		if !strings.Contains(body, want) {
			t.Errorf("the Deployment's page lacks %q:\n%s", want, body)
		}
	}
	for _, not := range []string{"other", "NotTheDeployments", "managedFields"} {
		if strings.Contains(body, not) {
			t.Errorf("the Deployment's page shows %q, which is not the Deployment's:\n%s", not, body)
		}
	}
	if href, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("#edit-link").getAttribute("href")`)); err != nil || href != "#/edit/deployments/default/web" {
		t.Errorf("the Edit link goes to %q (%v); want #/edit/deployments/default/web", href, err)
	}
	p.screenshot("detail-01-deployment")

	var d api.Deployment
	getDeployment := func() {
		t.Helper()
		d = api.Deployment{}
		getObj(t, admin, "deployments", "default", "web", &d)
	}

	// Scale.
	p.click("#act-scale")
	p.setValue("#scale-replicas", "5")
	p.click(`dialog button[type="submit"]`)
	p.do("see the Deployment scaled", chromedp.WaitVisible(chromedp.Search(`//dd/span[@class="badge warn" and text()="1/5"]`)))
	getDeployment()
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 5 {
		t.Errorf("after Scale to 5 on the page, spec.replicas = %v; want 5", d.Spec.Replicas)
	}

	// Pause: the rollback buttons wait for a resume.
	p.click("#act-pause")
	p.do("see the rollout paused", chromedp.WaitVisible(chromedp.CSS("#act-resume")), chromedp.WaitVisible(chromedp.CSS("#rollback-1[disabled]")))
	getDeployment()
	if !d.Spec.Paused {
		t.Error("after Pause on the page, spec.paused is false")
	}
	p.click("#act-resume")
	p.do("see the rollout resumed", chromedp.WaitVisible(chromedp.CSS("#act-pause")), chromedp.WaitVisible(chromedp.CSS("#rollback-1:not([disabled])")))
	getDeployment()
	if d.Spec.Paused {
		t.Error("after Resume on the page, spec.paused is true")
	}

	// Restart, confirmed.
	p.click("#act-restart")
	p.click("#confirm-ok")
	if msg := p.dialogError(); msg != "" {
		t.Fatalf("the restart failed: %s", msg)
	}
	p.do("see the page follow the restart", chromedp.WaitVisible(chromedp.Search(`//pre[@id="yaml-view" and contains(., "kubectl.kubernetes.io/restartedAt")]`)))
	getDeployment()
	at := d.Spec.Template.Annotations["kubectl.kubernetes.io/restartedAt"]
	if ts, err := time.Parse(time.RFC3339, at); err != nil || time.Since(ts) > time.Minute {
		t.Errorf("after Restart on the page, the template's restartedAt = %q (%v); want about now", at, err)
	}

	// Roll back to revision 1: the template is revision 1's, without its
	// pod-template-hash, and the change cause follows.
	p.click("#rollback-1")
	if got := p.text("#dialog-title"); got != "Roll web back to revision 1?" {
		t.Errorf("rollback dialog title %q", got)
	}
	p.screenshot("detail-02-rollback-confirm")
	p.click("#confirm-ok")
	if msg := p.dialogError(); msg != "" {
		t.Fatalf("the rollback failed: %s", msg)
	}
	p.do("see the YAML follow the rollback", chromedp.WaitVisible(chromedp.Search(`//pre[@id="yaml-view" and contains(., "nginx:1.26")]`)))
	getDeployment()
	if img := d.Spec.Template.Spec.Containers[0].Image; img != "nginx:1.26" {
		t.Errorf("after rolling back to revision 1, the image is %q; want nginx:1.26", img)
	}
	if _, ok := d.Spec.Template.Labels["pod-template-hash"]; ok || d.Spec.Template.Labels["app"] != "web" {
		t.Errorf("after the rollback the template labels are %v; want app=web without pod-template-hash", d.Spec.Template.Labels)
	}
	if c := d.Annotations["kubernetes.io/change-cause"]; c != "image 1.26" {
		t.Errorf("after the rollback the change cause is %q; want revision 1's", c)
	}
	if *d.Spec.Replicas != 5 {
		t.Errorf("the rollback changed replicas to %d", *d.Spec.Replicas)
	}

	// A rollback from a page that is out of date (someone changed the
	// template since) fails instead of undoing their change.
	res, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(async () => {
		const src = document.querySelector("script[type=module]").src;
		const api = await import(src.replace(/app\.js$/, "api.js")), r = await import(src.replace(/app\.js$/, "rollout.js"));
		const d = await api.get("/apis/apps/v1/namespaces/default/deployments/web");
		d.spec.template.spec.containers[0].image = "what the page showed before";
		const rs = await api.get("/apis/apps/v1/namespaces/default/replicasets/web-bbb");
		try { await r.rollback(d, "/apis/apps/v1/namespaces/default/deployments/web", rs); return "applied"; } catch (e) { return "refused: " + e.message; }
	})()`, chromedp.EvalAwaitPromise))
	if err != nil || !strings.Contains(res, "changed since this page showed it") {
		t.Errorf("a rollback from a stale page: %q (%v); want it refused", res, err)
	}
	getDeployment()
	if img := d.Spec.Template.Spec.Containers[0].Image; img != "nginx:1.26" {
		t.Errorf("after the refused rollback the image is %q; want it unchanged (nginx:1.26)", img)
	}

	// The ReplicaSet's page links back to its Deployment.
	p.goTo("#/replicasets/default/web-aaa", `section.detail[data-kind="ReplicaSet"]`)
	p.do("see the owner link", chromedp.WaitVisible(chromedp.CSS(`dd a[href="#/deployments/default/web"]`)))

	// Every other kind's page renders with what belongs to it.
	for _, c := range []struct {
		route, kind, shot string
		want              []string
	}{
		{"#/daemonsets/default/agentd", "DaemonSet", "detail-03-daemonset", []string{"busybox:1.36", "No pods."}},
		{"#/statefulsets/default/db", "StatefulSet", "detail-04-statefulset", []string{"postgres:16", "db-0"}},
		{"#/jobs/default/once", "Job", "detail-05-job", []string{"0/1", "restartPolicy: Never"}},
		{"#/services/default/web", "Service", "detail-06-service", []string{"http 80/TCP→8080", "10.42.0.7", "8080/TCP", "web-bbb-1", "NotTheDeployments"}},
		{"#/persistentvolumeclaims/default/data", "PersistentVolumeClaim", "detail-07-pvc", []string{"Pending", "1Gi", "ReadWriteOnce", "db-0"}},
	} {
		p.goTo(c.route, fmt.Sprintf(`section.detail[data-kind=%q] #yaml-view`, c.kind))
		p.do("see "+c.route+" loaded", chromedp.WaitNotPresent(chromedp.Search(`//main//p[text()="Loading…"]`)))
		body := p.text("main")
		for _, want := range c.want {
			if !strings.Contains(body, want) {
				t.Errorf("%s lacks %q:\n%s", c.route, want, body)
			}
		}
		if c.shot != "" {
			p.screenshot(c.shot)
		}
	}

	// Suspend the Job.
	p.goTo("#/jobs/default/once", "#act-suspend")
	p.click("#act-suspend")
	p.do("see the Job suspended", chromedp.WaitVisible(chromedp.CSS("#act-unsuspend")))
	var job api.Job
	getObj(t, admin, "jobs", "default", "once", &job)
	if job.Spec.Suspend == nil || !*job.Spec.Suspend {
		t.Error("after Suspend on the page, the Job is not suspended")
	}

	// Run the CronJob now: a Job owned by it, marked manual, shows in
	// its list.
	p.goTo("#/cronjobs/default/nightly", `section.detail[data-kind="CronJob"] #yaml-view`)
	// The Jobs list loads after the page; "Loading…" until it has.
	p.do("see the CronJob's jobs loaded", chromedp.WaitNotPresent(chromedp.Search(`//main//p[text()="Loading…"]`)))
	if body := p.text("main"); !strings.Contains(body, "0 3 * * *") || !strings.Contains(body, "No jobs.") {
		t.Errorf("the CronJob's page lacks its schedule or its (empty) job list:\n%s", body)
	}
	p.click("#act-trigger")
	p.do("see the manual job listed", chromedp.WaitVisible(chromedp.CSS(`a[href^="#/jobs/default/nightly-manual-"]`)))
	jobs, _, err := admin.List(context.Background(), resource(t, "jobs"), "default", client.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var manual *api.Job
	for _, o := range jobs {
		if j := o.(*api.Job); strings.HasPrefix(j.Name, "nightly-manual-") {
			manual = j
		}
	}
	if manual == nil {
		t.Fatal("Run now on the CronJob's page created no job nightly-manual-…")
	}
	if refs := manual.OwnerReferences; len(refs) != 1 || refs[0].Kind != "CronJob" || refs[0].Name != "nightly" || manual.Annotations["cronjob.kubernetes.io/instantiate"] != "manual" || manual.Labels["job"] != "nightly" {
		t.Errorf("the manual job's owner %v, annotations %v, labels %v; want the CronJob, instantiate=manual, job=nightly", refs, manual.Annotations, manual.Labels)
	}
	p.click("#act-suspend")
	p.do("see the CronJob suspended", chromedp.WaitVisible(chromedp.CSS("#act-unsuspend")))
	var cj api.CronJob
	getObj(t, admin, "cronjobs", "default", "nightly", &cj)
	if cj.Spec.Suspend == nil || !*cj.Spec.Suspend {
		t.Error("after Suspend on the page, the CronJob is not suspended")
	}
	p.screenshot("detail-08-cronjob")

	// Delete the Service: Cancel keeps it, Delete removes it.
	p.goTo("#/services/default/web", "#act-delete")
	p.click("#act-delete")
	p.click("#confirm-cancel")
	p.do("see the dialog close", chromedp.WaitNotPresent(chromedp.CSS("dialog[open]")))
	getObj(t, admin, "services", "default", "web", &api.Service{})
	p.click("#act-delete")
	p.click("#confirm-ok")
	p.do("see the Service go", chromedp.WaitVisible(chromedp.Search(`//p[contains(., "does not exist")]`)))
	var notFound *api.StatusError
	if _, err := admin.Get(context.Background(), resource(t, "services"), "default", "web"); !errors.As(err, &notFound) || notFound.Status.Code != 404 {
		t.Errorf("get the Service deleted on the page: %v; want 404", err)
	}

	// At a phone's width, in the dark.
	p.colorScheme("dark")
	p.do("phone width", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile, chromedp.EmulateScale(2)))
	p.goTo("#/deployments/default/web", "#act-scale")
	p.screenshot("detail-10-deployment-phone-dark")

	// A server that does not serve a kind: the page says so. (The page
	// is loaded again with discovery of batch/v1 answered as a server
	// without CronJobs would.)
	_, err = chromedp.Call(ctx, cdppage.AddScriptToEvaluateOnNewDocument, cdppage.AddScriptToEvaluateOnNewDocumentParams{Source: `{
		const f = window.fetch;
		window.fetch = (u, o) => String(u) === "/apis/batch/v1" ? Promise.resolve(new Response(JSON.stringify({kind: "APIResourceList", groupVersion: "batch/v1", resources: [{name: "jobs", kind: "Job", namespaced: true}]}), {status: 200})) : f(u, o);
	}`})
	if err != nil {
		t.Fatal(err)
	}
	p.do("reload", chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`#conn[data-state="live"]`)))
	p.goTo("#/cronjobs/default/nightly", "#detail-status")
	if got, ok := p.statusSays("does not serve CronJobs"); !ok {
		t.Errorf("the page of a kind the server does not serve says %q", got)
	}
	p.goTo("#/jobs/default/once", `section.detail[data-kind="Job"]`)

	for _, pr := range problems() {
		t.Errorf("page error: %s", pr)
	}
}

// dialogError waits for the open dialog to close and returns "", or
// returns the error it shows instead.
func (p *page) dialogError() string {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, waitTimeout)
	defer cancel()
	got, err := chromedp.Run(ctx, chromedp.Poll[string](`(() => { const d = document.getElementById("dialog"); return !d.open ? "closed" : (d.querySelector(".error") || {}).textContent; })()`))
	if err != nil {
		p.t.Fatalf("wait for the dialog to close: %v", err)
	}
	if got == "closed" {
		return ""
	}
	return got
}

// TestRollbackWithTheDeploymentController rolls a Deployment back from
// its page on a server that runs its controllers: the controller takes
// the old template back as kubectl rollout undo expects, reusing revision
// 1's ReplicaSet as revision 3, and the page follows.
func TestRollbackWithTheDeploymentController(t *testing.T) {
	chromium := findChromium(t)
	srv, admin := startServerWith(t, &testServer{clk: clock.NewFake(time.Now()), controllers: true})
	info := srv.info
	token, err := os.ReadFile(info.AdminTokenPath)
	if err != nil {
		t.Fatal(err)
	}
	createObj(t, admin, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"default"},
		"spec":{"replicas":1,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"c","image":"nginx:1.26"}]}}}}`)

	ctx, problems := startBrowser(t, chromium)
	p := &page{t: t, ctx: ctx, dir: artifactDir(t)}
	p.do("open the dashboard", chromedp.Navigate(info.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#token")))
	p.do("log in", chromedp.SendKeys(chromedp.CSS("#token"), strings.TrimSpace(string(token))), chromedp.Click(chromedp.CSS("#login-submit")),
		chromedp.WaitVisible(chromedp.CSS(`#conn[data-state="live"]`)))
	row := func(rev, image string) chromedp.Action[chromedp.Void] {
		return chromedp.WaitVisible(chromedp.Search(fmt.Sprintf(`//tr[td[1][text()=%q] and td[3][text()=%q]]`, rev, image)))
	}
	p.goTo("#/deployments/default/web", "#yaml-view")
	p.do("see revision 1", row("1 (current)", "nginx:1.26"))
	if _, err := admin.Patch(context.Background(), resource(t, "deployments"), "default", "web", client.StrategicMergePatchType,
		[]byte(`{"spec":{"template":{"spec":{"containers":[{"name":"c","image":"nginx:1.27"}]}}}}`)); err != nil {
		t.Fatal(err)
	}
	p.do("see revision 2", row("2 (current)", "nginx:1.27"), row("1", "nginx:1.26"))
	p.click("#rollback-1")
	p.click("#confirm-ok")
	if msg := p.dialogError(); msg != "" {
		t.Fatalf("the rollback failed: %s", msg)
	}
	p.do("see revision 1's template come back as revision 3", row("3 (current)", "nginx:1.26"), row("2", "nginx:1.27"))
	p.screenshot("detail-11-rolled-back")
	var d api.Deployment
	getObj(t, admin, "deployments", "default", "web", &d)
	if img := d.Spec.Template.Spec.Containers[0].Image; img != "nginx:1.26" {
		t.Errorf("after the rollback the Deployment runs %s; want nginx:1.26", img)
	}
	rss, _, err := admin.List(context.Background(), resource(t, "replicasets"), "default", client.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rss) != 2 {
		t.Errorf("after the rollback there are %d ReplicaSets; want 2 (revision 1's reused)", len(rss))
	}
	for _, pr := range problems() {
		t.Errorf("page error: %s", pr)
	}
}

// saToken creates a service account in ns bound to a ClusterRole there and
// returns a token for it.
func saToken(t *testing.T, c *client.Client, ns, name, role string) string {
	t.Helper()
	createObj(t, c, fmt.Sprintf(`{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":%q,"namespace":%q}}`, name, ns))
	createObj(t, c, fmt.Sprintf(`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"%s-%s","namespace":%q},
		"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":%q},"subjects":[{"kind":"ServiceAccount","name":%q,"namespace":%q}]}`, name, role, ns, role, name, ns))
	var tr api.TokenRequest
	if err := c.DoJSON(context.Background(), "POST", "/api/v1/namespaces/"+ns+"/serviceaccounts/"+name+"/token", map[string]any{"spec": map[string]any{}}, &tr); err != nil || tr.Status.Token == "" {
		t.Fatalf("token for %s/%s: %v", ns, name, err)
	}
	return tr.Status.Token
}

// TestDetailPagesForNamespaceTokens logs in with service account tokens
// bound in one namespace: a viewer reads the pages but is offered no
// action and no Edit link; an editor is offered them (the page asked the
// server, not assumed); neither reads another namespace's objects.
func TestDetailPagesForNamespaceTokens(t *testing.T) {
	chromium := findChromium(t)
	srv, admin := startServer(t, clock.NewFake(time.Now()))
	info := srv.info
	createObj(t, admin, `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team"}}`)
	for _, m := range []string{
		`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"%s"},"spec":{"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}}}`,
		`{"apiVersion":"batch/v1","kind":"CronJob","metadata":{"name":"nightly","namespace":"%s"},"spec":{"schedule":"@daily","jobTemplate":{"spec":{"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox"}]}}}}}}`,
		`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-1","namespace":"%s","labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}`,
	} {
		createObj(t, admin, fmt.Sprintf(m, "team"))
		createObj(t, admin, fmt.Sprintf(m, "default"))
	}
	viewer := saToken(t, admin, "team", "alice", "view")
	editor := saToken(t, admin, "team", "bob", "edit")

	ctx, problems := startBrowser(t, chromium)
	p := &page{t: t, ctx: ctx, dir: artifactDir(t)}
	login := func(token string) {
		p.do("open the dashboard", chromedp.Navigate(info.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#token")))
		p.do("log in", chromedp.SendKeys(chromedp.CSS("#token"), token), chromedp.Click(chromedp.CSS("#login-submit")), chromedp.WaitVisible(chromedp.CSS("#node-counts")))
	}
	count := func(sel string) int {
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](fmt.Sprintf(`document.querySelectorAll(%q).length`, sel)))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	const actions = `[id^="act-"], [id^="rollback-"], #edit-link`

	login(viewer)
	p.goTo("#/deployments/team/web", `a[href="#/pods/team/web-1"]`)
	if n := count(actions); n != 0 {
		t.Errorf("the viewer is offered %d actions on the Deployment's page; want none", n)
	}
	p.screenshot("detail-09-viewer")
	p.goTo("#/cronjobs/team/nightly", `section.detail[data-kind="CronJob"]`)
	if n := count(actions); n != 0 {
		t.Errorf("the viewer is offered %d actions on the CronJob's page; want none", n)
	}
	p.goTo("#/deployments/default/web", "#detail-status")
	if got, ok := p.statusSays("may not read"); !ok {
		t.Errorf("the viewer's page of a Deployment in another namespace says %q; want that it may not read it", got)
	}
	if strings.Contains(p.text("main"), "busybox") {
		t.Error("the viewer's page shows a Deployment of another namespace")
	}
	p.click("#logout")

	login(editor)
	p.goTo("#/deployments/team/web", "#act-scale")
	for _, sel := range []string{"#act-restart", "#act-pause", "#act-delete", "#edit-link"} {
		if count(sel) != 1 {
			t.Errorf("the editor is not offered %s on the Deployment's page", sel)
		}
	}
	p.goTo("#/cronjobs/team/nightly", "#act-trigger")
	p.click("#act-trigger")
	p.do("see the editor's manual job", chromedp.WaitVisible(chromedp.CSS(`a[href^="#/jobs/team/nightly-manual-"]`)))
	p.goTo("#/cronjobs/default/nightly", "#detail-status")
	if got, ok := p.statusSays("may not read"); !ok {
		t.Errorf("the editor's page of a CronJob in another namespace says %q", got)
	}
	for _, pr := range problems() {
		t.Errorf("page error: %s", pr)
	}
}
