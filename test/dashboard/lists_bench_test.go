package dashboard

import (
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/skiffhq/skiff/internal/clock"
)

// BenchmarkWorkloadsRender times one redraw of the workloads page with
// 2000 pods of 200 Deployments, grouped and sorted, in Chromium: the work
// the page does on every change of a live collection (at most once a
// frame). Tables show their first 300 rows until asked for all.
func BenchmarkWorkloadsRender(b *testing.B) {
	chromium := findChromium(b)
	srv, _ := startServer(b, clock.NewFake(time.Now()))
	ctx, _ := startBrowser(b, chromium)
	if _, err := chromedp.Run(ctx, chromedp.Navigate(srv.info.URL+"/")); err != nil {
		b.Fatal(err)
	}
	setup := `(async () => {
		const base = document.querySelector("script[type=module]").src.replace(/app\.js$/, "");
		const api = await import(base + "api.js"), { workloads } = await import(base + "lists.js");
		const deps = [], pods = [];
		for (let d = 0; d < 200; d++) {
			deps.push({ metadata: { name: "app" + d, namespace: "default" }, spec: { replicas: 10 }, status: { readyReplicas: 9 } });
			for (let i = 0; i < 10; i++) pods.push({ metadata: { name: "app" + d + "-5d8f9c-" + i, namespace: "default", labels: { app: "app" + d },
				ownerReferences: [{ kind: "ReplicaSet", name: "app" + d + "-5d8f9c", controller: true }] },
				spec: { nodeName: "edge-" + (i % 7), containers: [{ name: "c" }] }, status: { phase: "Running", podIP: "10.42.0." + i, containerStatuses: [{ ready: true, restartCount: i }] } });
		}
		const live = { pods: new api.StaticCollection(pods), deployments: new api.StaticCollection(deps), daemonsets: new api.StaticCollection(), namespaces: new api.StaticCollection([{ metadata: { name: "default" } }]) };
		window.benchRender = () => workloads.render({ live, perms: { scaleDeployments: true, deleteDeployments: true }, notify() {}, rerender() {} });
		return true;
	})()`
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](setup, chromedp.EvalAwaitPromise)); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	ms, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`(() => { const t0 = performance.now(); for (let i = 0; i < `+strconv.Itoa(b.N)+`; i++) document.body.append(benchRender()), document.body.lastChild.remove(); return performance.now() - t0; })()`))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(ms/float64(b.N), "ms/render")
}
