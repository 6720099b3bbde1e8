package dashboard

import (
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/skiffhq/skiff/internal/clock"
)

// BenchmarkTerminalWrite feeds term.js 1 MiB of shell output per op (ls
// -l style lines with colours, and full-screen redraws as vi and top
// send them) in Chromium, and renders the screen after each 4 KiB chunk
// as the console would at most once a frame.
func BenchmarkTerminalWrite(b *testing.B) {
	chromium := findChromium(b)
	srv, _ := startServer(b, clock.NewFake(time.Now()))
	ctx, _ := startBrowser(b, chromium)
	if _, err := chromedp.Run(ctx, chromedp.Navigate(srv.info.URL+"/")); err != nil {
		b.Fatal(err)
	}
	setup := `(async () => {
		const base = document.querySelector("script[type=module]").src.replace(/app\.js$/, "");
		const { Terminal } = await import(base + "term.js");
		const box = document.createElement("div");
		box.className = "console";
		document.body.append(box);
		const t = new Terminal();
		t.open(box);
		let s = "";
		for (let i = 0; s.length < 1 << 20; i++) {
			s += i % 50 === 49 ? "\x1b[H\x1b[2J" + "\x1b[7mPID USER COMMAND\x1b[m\r\n".repeat(20) :
				"-rw-r--r--    1 root     root          " + i + " Nov 25 04:00 \x1b[1;34mfile-" + i + "\x1b[0m.txt\r\n";
		}
		const bytes = new TextEncoder().encode(s).subarray(0, 1 << 20);
		window.benchTerm = (n, render) => {
			for (let k = 0; k < n; k++) for (let o = 0; o < bytes.length; o += 4096) { t.write(bytes.subarray(o, o + 4096)); if (render) t.render(); }
		};
		return true;
	})()`
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](setup, chromedp.EvalAwaitPromise)); err != nil {
		b.Fatal(err)
	}
	run := func(render bool) float64 {
		ms, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`(() => { const t0 = performance.now(); benchTerm(`+strconv.Itoa(b.N)+`, `+strconv.FormatBool(render)+`); return performance.now() - t0; })()`))
		if err != nil {
			b.Fatal(err)
		}
		return ms
	}
	b.ResetTimer()
	ms := run(true)
	b.StopTimer()
	b.ReportMetric(ms/float64(b.N), "ms/MiB")
	b.ReportMetric(float64(b.N)*1000/ms, "MiB/s")
	// The parser and screen model alone, without the DOM.
	b.ReportMetric(run(false)/float64(b.N), "ms/MiB-model")
}
