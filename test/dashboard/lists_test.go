package dashboard

import (
	"context"
	"encoding/base64"
	"fmt"
	"math"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/client"
	"github.com/skiffhq/skiff/internal/clock"
)

// eval runs a script in the page and returns its value.
func eval[T any](p *page, what, js string) T {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, waitTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		p.t.Fatalf("%s: %v", what, err)
	}
	return v
}

// choose picks an option of a select as a user does (a change event),
// in one step, so that a redraw cannot come in between.
func choose(sel, value string) chromedp.Action[chromedp.Void] {
	return chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => { const s = document.querySelector(%q); s.value = %q; s.dispatchEvent(new Event("change")); })()`, sel, value))
}

// login opens the dashboard and logs in with the admin token.
func login(t *testing.T, p *page, url, tokenPath string) {
	t.Helper()
	token, err := os.ReadFile(tokenPath)
	if err != nil {
		t.Fatal(err)
	}
	p.do("open the dashboard", chromedp.Navigate(url+"/"), chromedp.WaitVisible(chromedp.CSS("#token")))
	p.do("log in", chromedp.SendKeys(chromedp.CSS("#token"), strings.TrimSpace(string(token))), chromedp.Click(chromedp.CSS("#login-submit")),
		chromedp.WaitVisible(chromedp.CSS(`#conn[data-state="live"]`)), chromedp.WaitVisible(chromedp.CSS("#node-counts")))
}

// rowNames lists the names in the first column of the table with id.
func rowNames(p *page, id string) string {
	p.t.Helper()
	return eval[string](p, "read table "+id, fmt.Sprintf(`[...document.querySelectorAll("#%s tbody tr:not(.group) td:first-child")].map((td) => td.textContent).join(",")`, id))
}

// controlKeyJS names a control by where and what it is, a name that
// outlives the page's redraws.
const controlKeyJS = `((el) => [(el.closest("table, header") || {}).id || el.closest("header") && "header" || "", el.tagName, el.id, el.getAttribute("aria-label"), el.getAttribute("href"), el.textContent.trim()].join("|"))`

// unlabelled lists the visible controls of the page with no accessible
// name: no text, no aria-label(ledby), no <label>, no title.
const unlabelledJS = `[...document.querySelectorAll("button, input, select, textarea, a[href], [tabindex]:not([tabindex='-1'])")]
  .filter((el) => el.getClientRects().length && !(el.getAttribute("aria-label") || el.getAttribute("aria-labelledby") || (el.labels && el.labels.length) || el.textContent.trim() || el.title || el.querySelector("img[alt]:not([alt=''])")))
  .map((el) => el.outerHTML.slice(0, 120))`

func TestDashboardListsEditAndAccessibility(t *testing.T) {
	chromium := findChromium(t)
	clk := clock.NewFake(time.Now())
	srv, admin := startServer(t, clk)
	info := srv.info
	const secretValue = "s3cr3t-pump-password"
	owner := func(name string) string {
		return `"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"` + name + `","uid":"u-` + name + `","controller":true}]`
	}
	for _, m := range []string{
		`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"prod"}}`,
		`{"apiVersion":"v1","kind":"Node","metadata":{"name":"silent-1"}}`,
		`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"default"},
			"spec":{"replicas":1,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"c","image":"nginx"}]}}}}`,
		`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-7f9c-a","namespace":"default","labels":{"app":"web","tier":"front"},` + owner("web-7f9c") + `},"spec":{"containers":[{"name":"c","image":"nginx"}]}}`,
		`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-7f9c-b","namespace":"default","labels":{"app":"web","tier":"front"},` + owner("web-7f9c") + `},"spec":{"containers":[{"name":"c","image":"nginx"}]}}`,
		`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"db-0","namespace":"default","labels":{"app":"db","tier":"db"}},"spec":{"containers":[{"name":"c","image":"postgres"},{"name":"s","image":"busybox"}]}}`,
		`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"batch-1","namespace":"prod","labels":{"app":"batch"}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}`,
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings","namespace":"default"},"data":{"mode":"fast","motd":"line one\nline two\n",` +
			`"a":"yes","b":"0123","c":"","d":" lead","e":"x\n\n","f":"tab\there","g":"q\"s: #c","h":"ünï","i":"- d","j":"null","k":"~","l":"1e3","m":"no\nend","n":"{x}","o":"[y]"}}`,
		`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"pump","namespace":"default"},"stringData":{"password":"` + secretValue + `"}}`,
		`{"apiVersion":"v1","kind":"Service","metadata":{"name":"web","namespace":"default"},"spec":{"selector":{"app":"web"},"ports":[{"port":80}]}}`,
		`{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"once","namespace":"default"},"spec":{"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox"}]}}}}`,
		`{"apiVersion":"batch/v1","kind":"CronJob","metadata":{"name":"nightly","namespace":"default"},"spec":{"schedule":"0 3 * * *","jobTemplate":{"spec":{"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox"}]}}}}}}`,
		`{"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"name":"pg","namespace":"default"},"spec":{"serviceName":"pg","selector":{"matchLabels":{"app":"pg"}},"template":{"metadata":{"labels":{"app":"pg"}},"spec":{"containers":[{"name":"c","image":"postgres"}]}}}}`,
		`{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"data","namespace":"default"},"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}}`,
		`{"apiVersion":"v1","kind":"Event","metadata":{"name":"e1","namespace":"default"},"involvedObject":{"kind":"Pod","namespace":"default","name":"db-0"},"type":"Warning","reason":"BackOff","message":"restarting failed container"}`,
		`{"apiVersion":"v1","kind":"Event","metadata":{"name":"e2","namespace":"default"},"involvedObject":{"kind":"Pod","namespace":"default","name":"web-7f9c-a"},"type":"Normal","reason":"Pulled","message":"image pulled"}`,
	} {
		create(t, admin, m)
	}
	pods, _ := api.LookupResource("pods")
	if _, err := admin.PatchStatus(context.Background(), pods, "default", "db-0", client.MergePatchType,
		[]byte(`{"status":{"phase":"Running","containerStatuses":[{"name":"c","ready":true,"restartCount":3},{"name":"s","ready":false,"restartCount":1,"state":{"waiting":{"reason":"CrashLoopBackOff"}}}]}}`)); err != nil {
		t.Fatal(err)
	}

	ctx, problems := startBrowser(t, chromium)
	p := &page{t: t, ctx: ctx, dir: artifactDir(t)}
	login(t, p, info.URL, info.AdminTokenPath)

	// Pods: READY, restarts and owner, grouped by owner.
	p.goTo("#/workloads", `#pods a[href="#/pods/default/db-0"]`)
	groups := eval[string](p, "read groups", `[...document.querySelectorAll("#pods tr.group")].map((g) => g.textContent).join("|")`)
	if !strings.Contains(groups, "Deployment default/web (2)") || !strings.Contains(groups, "No owner (2)") {
		t.Errorf("pod groups %q; want Deployment default/web (2) and No owner (2)", groups)
	}
	db := eval[string](p, "read db-0", `[...document.querySelector('#pods a[href="#/pods/default/db-0"]').closest("tr").cells].map((c) => c.textContent).join("|")`)
	if !strings.HasPrefix(db, "db-0|default|1/2|CrashLoopBackOff|4|") {
		t.Errorf("db-0 row %q; want name, namespace, READY 1/2, CrashLoopBackOff (a waiting container's reason before the phase), 4 restarts", db)
	}
	if got := p.text(`#pods a[href="#/deployments/default/web"]`); got != "Deployment web" {
		t.Errorf("owner link %q; want Deployment web", got)
	}
	p.screenshot("20-workloads-grouped")

	// The filter: a name, then label selectors.
	for _, c := range []struct{ q, want string }{
		{"db", "db-0"},
		{"app=web", "web-7f9c-a,web-7f9c-b"},
		{"tier!=db,app", "batch-1,web-7f9c-a,web-7f9c-b"},
		{"app=web,tier!=front", ""},
	} {
		p.setValue("#filter", c.q)
		js := fmt.Sprintf(`[...document.querySelectorAll("#pods tbody tr:not(.group) td:first-child")].map((td) => td.textContent).sort().join(",") === %q`, c.want)
		if _, err := chromedp.Run(p.ctx, chromedp.Poll[chromedp.Void](js, chromedp.WithPollingTimeout(5*time.Second))); err != nil {
			t.Errorf("filter %q shows pods %q; want %q", c.q, rowNames(p, "pods"), c.want)
		}
	}
	if got := p.text("main"); !strings.Contains(got, "No pods match.") {
		t.Errorf("an empty filter result does not say so:\n%s", got)
	}
	p.setValue("#filter", "")
	p.do("see all pods", chromedp.WaitVisible(chromedp.CSS(`#pods a[href="#/pods/prod/batch-1"]`)))

	// Sorting: by name, ascending at first; a click turns it around.
	if got := eval[string](p, "aria-sort", `document.querySelector("#pods th").getAttribute("aria-sort")`); got != "ascending" {
		t.Errorf("name column aria-sort %q at first; want ascending", got)
	}
	p.click("#pods th button")
	p.do("see it sorted descending", chromedp.WaitVisible(chromedp.CSS(`#pods th[aria-sort="descending"]`)))
	if got := rowNames(p, "pods"); !strings.HasPrefix(got, "web-7f9c-b,web-7f9c-a") {
		t.Errorf("pods sorted by name descending: %q", got)
	}

	// The namespace picker remembers its choice across a reload.
	p.do("pick prod", choose("#ns-filter", "prod"))
	p.do("reload", chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("main h1")))
	p.goTo("#/workloads", `#pods a[href="#/pods/prod/batch-1"]`)
	if got, names := eval[string](p, "picker", `document.querySelector("#ns-filter").value`), rowNames(p, "pods"); got != "prod" || names != "batch-1" {
		t.Errorf("after a reload the picker shows %q and pods %q; want prod and batch-1", got, names)
	}
	// A remembered namespace that is gone is forgotten.
	p.do("remember a deleted namespace", chromedp.Evaluate[chromedp.Void](`localStorage.setItem("skiff.ns", "gone")`), chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("main h1")))
	p.goTo("#/workloads", `#pods a[href="#/pods/default/db-0"]`)

	// A node that never reported shows no made-up figures.
	p.goTo("#/nodes", `a[href="#/nodes/silent-1"]`)
	row := eval[string](p, "silent row", `document.querySelector('a[href="#/nodes/silent-1"]').closest("tr").textContent`)
	if strings.Contains(row, "?") || !strings.Contains(row, "not reported") || !strings.Contains(row, "—") {
		t.Errorf("the node without status reads %q; want — and not reported, no ?", row)
	}

	// Secrets: the value is nowhere in the page until Show is pressed.
	p.goTo("#/secrets", `a[href="#/secrets/default/pump"]`)
	b64 := base64.StdEncoding.EncodeToString([]byte(secretValue))
	html := eval[string](p, "page source", `document.documentElement.outerHTML`)
	if strings.Contains(html, secretValue) || strings.Contains(html, b64) {
		t.Fatalf("the secret's value is in the page before it was asked for")
	}
	p.screenshot("21-secrets-hidden")
	p.click(`button[aria-label="Show password of pump"]`)
	if got := p.text(".secret .value"); got != secretValue {
		t.Errorf("shown secret value %q; want %q", got, secretValue)
	}
	p.goTo("#/configmaps", `a[href="#/configmaps/default/settings"]`)
	if html := eval[string](p, "page source", `document.documentElement.outerHTML`); strings.Contains(html, secretValue) {
		t.Errorf("the secret's value stays in the page after leaving the Secrets list")
	}

	// Events, filtered by type and reason.
	p.goTo("#/events", "#event-type")
	p.do("see both events", chromedp.WaitVisible(chromedp.Search(`//td[text()="BackOff"]`)), chromedp.WaitVisible(chromedp.Search(`//td[text()="Pulled"]`)))
	p.do("only warnings", choose("#event-type", "Warning"),
		chromedp.WaitNotPresent(chromedp.Search(`//td[text()="Pulled"]`)))
	p.do("any type", choose("#event-type", ""), chromedp.WaitVisible(chromedp.Search(`//td[text()="Pulled"]`)))
	p.do("reason Pulled", choose("#event-reason", "Pulled"),
		chromedp.WaitNotPresent(chromedp.Search(`//td[text()="BackOff"]`)), chromedp.WaitVisible(chromedp.Search(`//td[text()="Pulled"]`)))
	p.screenshot("22-events")

	// Edit in place: the YAML as read saves unchanged (the emitter round-trips).
	deploys, _ := api.LookupResource("deployments")
	replicas := func() int32 {
		t.Helper()
		d, err := admin.Get(context.Background(), deploys, "default", "web")
		if err != nil {
			t.Fatal(err)
		}
		return *d.(*api.Deployment).Spec.Replicas
	}
	p.goTo("#/edit/configmaps/default/settings", "#edit-yaml")
	p.do("see the YAML", chromedp.Poll[chromedp.Void](`document.querySelector("#edit-yaml").value.includes("motd: |")`, chromedp.WithPollingTimeout(waitTimeout)))
	cms, _ := api.LookupResource("configmaps")
	before, err := admin.Get(context.Background(), cms, "default", "settings")
	if err != nil {
		t.Fatal(err)
	}
	p.click("#edit-save")
	p.do("see it saved", chromedp.WaitVisible(chromedp.Search(`//div[@id="toast" and text()="settings saved."]`)))
	// The toast is part of the header: it pushes the page down and covers none of it.
	if !eval[bool](p, "toast placement", `document.getElementById("toast").getBoundingClientRect().bottom <= document.getElementById("main").getBoundingClientRect().top`) {
		t.Error("the toast overlaps the page")
	}
	after, err := admin.Get(context.Background(), cms, "default", "settings")
	if err != nil {
		t.Fatal(err)
	}
	if b, a := before.(*api.ConfigMap).Data, after.(*api.ConfigMap).Data; !reflect.DeepEqual(a, b) {
		t.Errorf("the YAML as shown does not save back to the same data:\nbefore %q\nafter  %q", b, a)
	}
	// A toast ends with its view.
	p.goTo("#/edit/deployments/default/web", "#edit-yaml")
	if v := eval[bool](p, "toast", `document.getElementById("toast").hidden`); !v {
		t.Error("the toast stayed after the view changed")
	}
	p.do("see the YAML", chromedp.Poll[chromedp.Void](`document.querySelector("#edit-yaml").value.includes("replicas: 1")`, chromedp.WithPollingTimeout(waitTimeout)))
	yaml := eval[string](p, "yaml", `document.querySelector("#edit-yaml").value`)

	// A dry run names the bad field and changes nothing.
	p.setValue("#edit-yaml", strings.Replace(yaml, "replicas: 1", "replicas: -1", 1))
	p.click("#edit-check")
	if got := p.text("#edit-result code.field"); got != "spec.replicas" {
		t.Errorf("the dry run names field %q; want spec.replicas", got)
	}
	p.screenshot("23-edit-dry-run-error")
	if n := replicas(); n != 1 {
		t.Errorf("after a refused dry run, replicas = %d; want 1", n)
	}
	p.setValue("#edit-yaml", strings.Replace(yaml, "replicas: 1", "replicas: 2", 1))
	p.click("#edit-check")
	p.do("see the dry run pass", chromedp.WaitVisible(chromedp.Search(`//div[@id="edit-result"]//p[text()="The server would accept this."]`)))
	if n := replicas(); n != 1 {
		t.Errorf("after a dry run, replicas = %d; want 1 (nothing saved)", n)
	}

	// Someone else changes it: Save is a 409 that shows what changed.
	if _, err := admin.Patch(context.Background(), deploys, "default", "web", client.MergePatchType, []byte(`{"metadata":{"labels":{"changed-by":"someone-else"}}}`)); err != nil {
		t.Fatal(err)
	}
	p.click("#edit-save")
	diff := p.text("#edit-diff")
	if !strings.Contains(diff, "- ") || !strings.Contains(diff, "changed-by: someone-else") || !strings.Contains(diff, "+     replicas: 2") && !strings.Contains(diff, "+   replicas: 2") {
		t.Errorf("the conflict's diff does not show the other change and ours:\n%s", diff)
	}
	p.screenshot("24-edit-conflict")
	if n := replicas(); n != 1 {
		t.Errorf("after a conflict, replicas = %d; want 1", n)
	}
	// Reload, edit again, save.
	p.click("#edit-reload")
	p.do("see the current version", chromedp.Poll[chromedp.Void](`document.querySelector("#edit-yaml").value.includes("changed-by: someone-else")`, chromedp.WithPollingTimeout(waitTimeout)))
	yaml = eval[string](p, "yaml", `document.querySelector("#edit-yaml").value`)
	p.setValue("#edit-yaml", strings.Replace(yaml, "replicas: 1", "replicas: 2", 1))
	p.click("#edit-save")
	p.do("see it saved", chromedp.WaitVisible(chromedp.Search(`//div[@id="toast" and text()="web saved."]`)))
	if n := replicas(); n != 2 {
		t.Errorf("after Save, replicas = %d; want 2", n)
	}
	// Toasts expire by themselves.
	p.do("see the toast go", chromedp.WaitNotVisible(chromedp.CSS("#toast")))

	// Global search: "/" focuses it, Enter opens the first match.
	p.goTo("#/", "#node-counts")
	p.do("press /", chromedp.KeyEvent("/"))
	if id := eval[string](p, "focus", `document.activeElement.id`); id != "search" {
		t.Fatalf("after /, focus is on %q; want the search box", id)
	}
	if _, err := chromedp.Run(p.ctx, chromedp.KeyEvent("app=db")); err != nil {
		t.Fatal(err)
	}
	p.do("type app=db", chromedp.WaitVisible(chromedp.CSS(`#search-results a[href="#/pods/default/db-0"]`)))
	if got := p.text("#search-results"); strings.Contains(got, "web") {
		t.Errorf("search app=db found %q", got)
	}
	p.do("search silent", chromedp.Evaluate[chromedp.Void](`document.getElementById("search").value = ""`), chromedp.KeyEvent("silent"), chromedp.WaitVisible(chromedp.CSS(`#search-results a[href="#/nodes/silent-1"]`)))
	p.screenshot("25-search")
	p.do("enter", chromedp.KeyEvent("\r"), chromedp.WaitVisible(chromedp.Search(`//h1[contains(., "silent-1")]`)))

	// Each kind's list shows its objects, linked to their pages; and on
	// every page every control has a name.
	for _, c := range []struct{ route, row string }{
		{"#/services", "#/services/default/web"}, {"#/jobs", "#/jobs/default/once"}, {"#/cronjobs", "#/cronjobs/default/nightly"},
		{"#/statefulsets", "#/statefulsets/default/pg"}, {"#/persistentvolumeclaims", "#/persistentvolumeclaims/default/data"},
		{"#/namespaces", "#/edit/namespaces/-/prod"}, {"#/configmaps", "#/configmaps/default/settings"}, {"#/secrets", "#/secrets/default/pump"},
		{"#/workloads", "#/pods/default/db-0"}, {"#/events", "#/edit/events/default/e1"}, {"#/nodes", "#/nodes/silent-1"}, {"#/edit/deployments/default/web", "#/deployments/default/web"},
	} {
		r := c.route
		p.goTo(r, fmt.Sprintf(`main a[href=%q]`, c.row))
		if bad := eval[[]string](p, "unlabelled controls", unlabelledJS); len(bad) > 0 {
			t.Errorf("%s: controls without a label: %q", r, bad)
		}
	}

	// Contrast of the theme's colour pairs, in both themes.
	for _, scheme := range []string{"light", "dark"} {
		p.colorScheme(scheme)
		vars := eval[map[string]string](p, "colours", `(() => { const cs = getComputedStyle(document.documentElement), o = {};
			for (const v of ["bg", "panel", "fg", "muted", "accent", "accent-fg", "focus", "ok", "ok-bg", "warn", "warn-bg", "bad", "bad-bg", "muted-bg"]) o[v] = cs.getPropertyValue("--" + v).trim();
			return o; })()`)
		for _, c := range contrastPairs {
			r, err := contrast(vars[c.fg], vars[c.bg])
			if err != nil {
				t.Fatalf("%s: %v", scheme, err)
			}
			if r < c.min {
				t.Errorf("%s theme: --%s on --%s has contrast %.2f; WCAG AA wants %.1f", scheme, c.fg, c.bg, r, c.min)
			}
		}
	}
	p.colorScheme("light")

	// The keyboard reaches every control of the page, header included.
	for _, c := range []struct{ route, ready string }{
		{"#/workloads", `button[aria-label="Scale default/web"]`}, {"#/secrets", `button[aria-label="Show password of pump"]`}, {"#/edit/deployments/default/web", "#edit-save"},
	} {
		p.goTo(c.route, c.ready)
		all := eval[[]string](p, "list controls", `[...document.querySelectorAll("a[href], button, input, select, textarea")].filter((el) => el.getClientRects().length && !el.disabled).map(`+controlKeyJS+`)`)
		want := map[string]bool{}
		for _, k := range all {
			want[k] = true
		}
		reached := map[string]bool{}
		p.do("start from the top", chromedp.Evaluate[chromedp.Void](`document.activeElement.blur()`))
		for i := 0; i < len(all)+20 && len(reached) < len(want); i++ {
			p.do("tab", chromedp.KeyEvent(kb.Tab))
			if k := eval[string](p, "focused", `(`+controlKeyJS+`)(document.activeElement)`); want[k] {
				reached[k] = true
			}
		}
		for k := range want {
			if !reached[k] {
				t.Errorf("%s: Tab never reaches %s", c.route, k)
			}
		}
	}
	p.goTo("#/workloads", `button[aria-label="Scale default/web"]`)
	// Enter opens a dialog from the keyboard, Escape closes it and focus returns.
	p.do("focus Scale", chromedp.Focus(chromedp.CSS(`button[aria-label="Scale default/web"]`)), chromedp.KeyEvent("\r"), chromedp.WaitVisible(chromedp.CSS("#scale-replicas")))
	p.do("escape", chromedp.KeyEvent(kb.Escape), chromedp.WaitNotVisible(chromedp.CSS("#scale-replicas")))
	if got := eval[string](p, "focus after escape", `document.activeElement.getAttribute("aria-label") || ""`); got != "Scale default/web" {
		t.Errorf("after Escape focus is on %q; want the Scale button", got)
	}

	// The phone: the nav is a menu, and every item in it is visible and
	// clickable at 390 px.
	p.do("phone width", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile, chromedp.EmulateScale(2)))
	p.goTo("#/", "#menu")
	items := eval[[]string](p, "nav items", `[...document.querySelectorAll("#nav a")].map((a) => a.getAttribute("href"))`)
	if len(items) < 9 {
		t.Fatalf("nav has %d items: %q", len(items), items)
	}
	for i, href := range items {
		p.click("#menu")
		p.do("see the menu", chromedp.WaitVisible(chromedp.CSS("#nav")))
		if i == 0 {
			p.screenshot("26-phone-menu")
		}
		js := fmt.Sprintf(`(() => { const a = document.querySelector('#nav a[href=%q]'), r = a.getBoundingClientRect();
			const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
			return r.width > 0 && r.height > 0 && r.left >= 0 && r.right <= innerWidth && r.top >= 0 && r.bottom <= innerHeight && (hit === a || a.contains(hit)); })()`, href)
		if !eval[bool](p, "visible "+href, js) {
			t.Errorf("at 390 px nav item %s is not fully visible and on top", href)
			continue
		}
		p.do("tap "+href, chromedp.Click(chromedp.CSS(`#nav a[href="`+href+`"]`)),
			// The page has routed there when the item is marked current.
			chromedp.Poll[chromedp.Void](fmt.Sprintf(`location.hash === %q && document.querySelector('#nav a[href=%q]').getAttribute("aria-current") === "page"`, href, href), chromedp.WithPollingTimeout(waitTimeout)))
		if open := eval[bool](p, "menu closed", `document.body.classList.contains("nav-open")`); open {
			t.Errorf("the menu stays open after choosing %s", href)
		}
	}
	p.goTo("#/workloads", "#pods")
	p.screenshot("27-workloads-phone")
	p.colorScheme("dark")
	p.goTo("#/events", "#event-type")
	p.screenshot("28-events-phone-dark")

	for _, pr := range problems() {
		t.Errorf("page error: %s", pr)
	}
}

// contrastPairs are the theme's text-on-background pairs, with the WCAG
// AA minimum for each (4.5 for text, 3 for the focus ring).
var contrastPairs = []struct {
	fg, bg string
	min    float64
}{
	{"fg", "bg", 4.5}, {"fg", "panel", 4.5}, {"fg", "muted-bg", 4.5}, {"muted", "bg", 4.5}, {"muted", "panel", 4.5}, {"muted", "muted-bg", 4.5},
	{"accent", "bg", 4.5}, {"accent", "panel", 4.5}, {"accent", "muted-bg", 4.5}, {"accent-fg", "accent", 4.5},
	{"ok", "ok-bg", 4.5}, {"warn", "warn-bg", 4.5}, {"bad", "bad-bg", 4.5}, {"bad", "panel", 4.5}, {"fg", "warn-bg", 4.5},
	{"focus", "bg", 3}, {"focus", "panel", 3},
}

// contrast is the WCAG 2 contrast ratio of two #rrggbb (or #rgb) colours.
func contrast(a, b string) (float64, error) {
	la, err := luminance(a)
	if err != nil {
		return 0, err
	}
	lb, err := luminance(b)
	if err != nil {
		return 0, err
	}
	if la < lb {
		la, lb = lb, la
	}
	return (la + 0.05) / (lb + 0.05), nil
}

func luminance(hex string) (float64, error) {
	if len(hex) == 4 && hex[0] == '#' { // #rgb
		hex = string([]byte{'#', hex[1], hex[1], hex[2], hex[2], hex[3], hex[3]})
	}
	if len(hex) != 7 || hex[0] != '#' {
		return 0, fmt.Errorf("colour %q is not #rrggbb", hex)
	}
	var l float64
	for i, w := range []float64{0.2126, 0.7152, 0.0722} {
		v, err := strconv.ParseUint(hex[1+2*i:3+2*i], 16, 8)
		if err != nil {
			return 0, fmt.Errorf("colour %q: %w", hex, err)
		}
		c := float64(v) / 255
		if c <= 0.04045 {
			c /= 12.92
		} else {
			c = math.Pow((c+0.055)/1.055, 2.4)
		}
		l += w * c
	}
	return l, nil
}

func TestContrast(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want float64
	}{{"#000000", "#ffffff", 21}, {"#ffffff", "#ffffff", 1}, {"#767676", "#fff", 4.54}} {
		got, err := contrast(c.a, c.b)
		if err != nil || math.Abs(got-c.want) > 0.01 {
			t.Errorf("contrast(%s, %s) = %.3f, %v; want %.2f", c.a, c.b, got, err, c.want)
		}
	}
	if _, err := contrast("blue", "#ffffff"); err == nil {
		t.Error("contrast of a named colour succeeded; want an error")
	}
}

// TestDashboardHelpersInRealBrowser runs the page's own filter, YAML
// writer and diff (the modules as served) on edge cases.
func TestDashboardHelpersInRealBrowser(t *testing.T) {
	chromium := findChromium(t)
	srv, _ := startServer(t, clock.NewFake(time.Now()))
	ctx, problems := startBrowser(t, chromium)
	p := &page{t: t, ctx: ctx, dir: artifactDir(t)}
	p.do("open the dashboard", chromedp.Navigate(srv.info.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#token")))
	got, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]any](`(async () => {
		const base = document.querySelector("script[type=module]").src.replace(/app\.js$/, "");
		const { matcher } = await import(base + "lists.js"), { toYAML, diff } = await import(base + "edit.js");
		const o = (name, labels) => ({ metadata: { name, labels } });
		const m = (q, ...objs) => objs.map((x) => matcher(q)(x));
		return {
			name: m("WEB", o("my-web-1"), o("db")),
			sel: m("app=web,tier!=db", o("a", { app: "web", tier: "front" }), o("b", { app: "web", tier: "db" }), o("c", { app: "web" }), o("d")),
			exists: m("app,!canary", o("a", { app: "x" }), o("b", { app: "x", canary: "" }), o("c")),
			eq: m("app==web", o("a", { app: "web" }), o("b", { app: "webs" })),
			yaml: toYAML({ a: [[1, "x"], [], {}], "b c": { yes: "no", e: null, f: true, g: [{ h: "multi\nline" }] }, i: "" }).slice(1),
			diff: diff("a\nb\nc", "a\nx\nc\nd"),
			limit: await (async () => {
				// A long list shows its first rows and a button for the rest.
				const api = await import(base + "api.js"), { workloads } = await import(base + "lists.js");
				const pods = [];
				for (let i = 0; i < 301; i++) pods.push({ metadata: { name: "p" + i, namespace: "default" }, spec: { containers: [] } });
				const S = (l = []) => new api.StaticCollection(l);
				let redraws = 0;
				const c = { live: { pods: S(pods), deployments: S(), daemonsets: S(), namespaces: S() }, perms: {}, notify() {}, rerender() { redraws++; } };
				workloads.enter(c);
				let el = workloads.render(c);
				const rows = () => el.querySelectorAll("#pods tbody tr:not(.group)").length;
				const before = rows(), more = [...el.querySelectorAll("button")].find((b) => b.textContent === "show all 301");
				more.click();
				el = workloads.render(c);
				return [before, redraws, rows()];
			})(),
		};
	})()`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"name":   []any{true, false},
		"sel":    []any{true, false, true, false},
		"exists": []any{true, false, false},
		"eq":     []any{true, false},
		"yaml":   "a:\n  - - 1\n    - x\n  - []\n  - {}\n\"b c\":\n  \"yes\": \"no\"\n  e: null\n  f: true\n  g:\n    - h: |-\n        multi\n        line\ni: \"\"",
		"diff":   []any{"- b", "+ x", "+ d"},
		"limit":  []any{float64(300), float64(1), float64(301)},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("page helpers:\n got %#v\nwant %#v", got, want)
	}
	for _, pr := range problems() {
		t.Errorf("page error: %s", pr)
	}
}
