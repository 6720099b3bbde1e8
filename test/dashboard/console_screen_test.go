package dashboard

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/skiffhq/skiff/internal/clock"
)

// TestConsoleFullScreenInRealBrowser runs busybox vi and top in the pod
// console: their full-screen output shows on the alternate screen, and
// quitting brings back the shell's screen and a working prompt.
func TestConsoleFullScreenInRealBrowser(t *testing.T) {
	chromium := findChromium(t)
	srv, admin := startServer(t, clock.NewFake(time.Now()))
	create(t, admin, `{"apiVersion":"v1","kind":"Node","metadata":{"name":"edge-1"}}`)
	create(t, admin, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-1","namespace":"default"},
		"spec":{"nodeName":"edge-1","containers":[{"name":"web","image":"busybox:1.36"}]}}`)
	ctx, problems := startBrowser(t, chromium)
	p := &page{t: t, ctx: ctx, dir: artifactDir(t)}
	login(t, p, srv.info.URL, srv.info.AdminTokenPath)
	p.goTo("#/pods/default/web-1", "#console-start")
	startStandInAgent(t, srv.info, "edge-1", "web-1")
	p.click("#console-start")
	p.do("see the shell connect", chromedp.WaitVisible(chromedp.Search(`//span[@id="console-status" and starts-with(text(), "Connected")]`)))
	row := func(text string) chromedp.Action[chromedp.Void] {
		return chromedp.WaitVisible(chromedp.Search(`//div[@class="term-grid"]/div[contains(., "` + text + `")]`))
	}
	rowsWith := func(text string) int {
		return eval[int](p, "count rows with "+text, `[...document.querySelectorAll(".term-grid > div")].filter((d) => d.textContent.includes(`+mustJSON(text)+`)).length`)
	}
	const in = "#console textarea.term-input"
	p.typeInto(in, "echo before=$((40+2))")
	p.do("see the shell's answer", row("before=42"))

	// vi: a full screen of ~ lines and its status line, on the alternate screen.
	p.typeInto(in, "busybox vi notes.txt")
	p.do("see vi's screen", row("~"), row("notes.txt 1/1"))
	if n := rowsWith("before=42"); n != 0 {
		t.Errorf("vi's screen shows %d rows of the shell's; want its own screen only", n)
	}
	p.screenshot("console-vi")
	p.do("write in vi", chromedp.Focus(chromedp.CSS(in), chromedp.NodeReady),
		insertText("ihello from vi"), row("I notes.txt"), chromedp.KeyEvent(kb.Escape), row("- notes.txt [Modified]"),
		insertText(":wq"), chromedp.KeyEvent("\r"))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the terminal's screen:\n%s", p.text("#console .term-grid"))
		}
	})
	p.do("see the shell's screen again", row("before=42"))
	if n := eval[int](p, "count vi's rows", `[...document.querySelectorAll(".term-grid > div")].filter((d) => d.textContent.trim() === "~").length`); n != 0 {
		t.Errorf("after vi quit, %d rows of its screen remain; want the shell's screen back", n)
	}
	p.typeInto(in, "cat notes.txt")
	p.do("see the file vi wrote", row("hello from vi"))

	// top, once: its process table, then the prompt again.
	p.typeInto(in, "busybox top -n 1 -b | head -5; busybox top -n 1 >/dev/null; echo after=$((2+3))")
	p.do("see top's table and the shell", row("PID"), row("after=5"))
	p.typeInto(in, "busybox top")
	// Its frame starts at the top left (the earlier batch run's lines do not).
	p.do("see top", chromedp.WaitVisible(chromedp.Search(`//div[@class="term-grid"]/div[1][starts-with(., "Mem:")]`)), row("Load average"))
	p.screenshot("console-top")
	p.do("quit top", chromedp.Focus(chromedp.CSS(in), chromedp.NodeReady), insertText("q"))
	p.typeInto(in, "echo back=$((3*3))")
	p.do("see the prompt after top", row("back=9"))
	// busybox top draws on the normal screen (no alternate screen), and
	// the terminal kept its width through the page's redraws: every row
	// is as wide as at the start.
	if got := eval[[]int](p, "read row widths", `[...new Set([...document.querySelectorAll(".term-grid > div")].map((d) => d.textContent.length))]`); len(got) != 1 || got[0] < 100 {
		t.Errorf("the terminal's rows are %v columns wide; want one width, over 100", got)
	}
	// Colours, in both themes: a red run is ANSI colour 1, a CSS variable
	// of each theme.
	p.typeInto(in, `printf '\033[31mred\033[0m \033[1;32mbold-green\033[0m \033[7minverse\033[0m \033[38;5;208morange\033[0m\n'`)
	p.do("see coloured text", chromedp.WaitVisible(chromedp.Search(`//div[@class="term-grid"]/div/span[@style="color: var(--t1);" and text()="red"]`)),
		chromedp.WaitVisible(chromedp.Search(`//div[@class="term-grid"]/div/span[@class="tb" and @style="color: var(--t2);" and text()="bold-green"]`)))
	colour := func() string {
		return eval[string](p, "read the red run's colour", `getComputedStyle([...document.querySelectorAll(".term-grid span[style='color: var(--t1);']")].pop()).color`)
	}
	light := colour()
	p.colorScheme("dark")
	if dark := colour(); dark == light {
		t.Errorf("red is %s in both themes; want each theme's own", dark)
	}
	p.screenshot("console-dark")
	p.colorScheme("light")
	p.screenshot("console-after")
	p.typeInto(in, "exit")
	p.do("see the shell end", chromedp.WaitVisible(chromedp.Search(`//span[@id="console-status" and text()="The shell exited."]`)))
	for _, pr := range problems() {
		t.Errorf("page error: %s", pr)
	}
}

// insertText types text as one input event, as typeInto does.
func insertText(text string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Call(ctx, input.InsertText, input.InsertTextParams{Text: text})
		return err
	})
}
