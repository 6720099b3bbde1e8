package dashboard

import (
	"reflect"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/skiffhq/skiff/internal/clock"
)

// TestTerminalInRealBrowser feeds term.js (the module as served) the
// byte sequences busybox sh, vi, less and top emit, and checks the
// screen model: text, cursor, attributes, modes and the replies it sends.
func TestTerminalInRealBrowser(t *testing.T) {
	chromium := findChromium(t)
	srv, _ := startServer(t, clock.NewFake(time.Now()))
	ctx, problems := startBrowser(t, chromium)
	p := &page{t: t, ctx: ctx, dir: artifactDir(t)}
	p.do("open the dashboard", chromedp.Navigate(srv.info.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#token")))
	got, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]any](`(async () => {
		const base = document.querySelector("script[type=module]").src.replace(/app\.js$/, "");
		const { Terminal } = await import(base + "term.js");
		const mk = (cols = 10, rows = 4) => {
			const sent = [];
			const t = new Terminal({ cols, rows, onData: (d) => sent.push(d) });
			t.sent = sent;
			return t;
		};
		const lines = (t) => t.lines.map((_, y) => t.lineText(y));
		const cur = (t) => [t.x, t.y];
		const r = {};
		let t;

		// Text, CR, LF, BS, TAB, BEL; deferred wrap at the right margin.
		t = mk();
		t.write("ab\bc\tX\x07\r\nhi");
		r.basic = [lines(t), cur(t)];
		t = mk(5, 3);
		t.write("12345");
		r.pendingWrap = cur(t);
		t.write("6");
		r.wrapped = [lines(t), cur(t)];
		t = mk(5, 3);
		t.write("\x1b[?7l123456\x1b[?7h");
		r.noAutowrap = lines(t)[0];

		// UTF-8 split across chunks (é is C3 A9, € is E2 82 AC).
		t = mk();
		t.write(new Uint8Array([0x61, 0xc3]));
		t.write(new Uint8Array([0xa9, 0xe2, 0x82]));
		t.write(new Uint8Array([0xac, 0x62]));
		r.utf8 = [lines(t)[0], cur(t)];

		// Cursor movement: CUP/HVP, CUU/CUD/CUF/CUB, CHA, VPA, CNL, CPL.
		t = mk(10, 6);
		const at = (s) => { t.write(s); return cur(t); };
		r.moves = [at("\x1b[3;4H"), at("\x1b[A"), at("\x1b[2B"), at("\x1b[3C"), at("\x1b[5D"), at("\x1b[9G"),
			at("\x1b[2d"), at("\x1b[E"), at("\x1b[2F"), at("\x1b[99;99f"), at("\x1b[H"), at("\x1b[20A")];

		// ED and EL 0, 1, 2; ICH, DCH, ECH.
		t = mk(6, 3);
		t.write("abcdef\r\nghijkl\r\nmnopqr\x1b[2;3H\x1b[K");
		r.el0 = lines(t);
		t.write("\x1b[1;3H\x1b[1K\x1b[3;1H\x1b[2K");
		r.el12 = lines(t);
		t.write("\x1b[2;1H\x1b[1J");
		r.ed1 = lines(t);
		t = mk(6, 3);
		t.write("abcdef\r\nghijkl\x1b[1;2H\x1b[J");
		r.ed0 = lines(t);
		t.write("\x1b[2J");
		r.ed2 = lines(t);
		t = mk(6, 1);
		t.write("abcdef\x1b[1;2H\x1b[2@");
		r.ich = lines(t)[0];
		t.write("\x1b[3P");
		r.dch = lines(t)[0];
		t.write("\x1b[1;1H\x1b[2X");
		r.ech = lines(t)[0];

		// IL, DL; scroll region (DECSTBM) with LF, SU, SD, RI, IND, NEL.
		t = mk(3, 5);
		t.write("a\r\nb\r\nc\r\nd\r\ne\x1b[2;1H\x1b[L");
		r.il = lines(t);
		t.write("\x1b[2M");
		r.dl = lines(t);
		t = mk(3, 5);
		t.write("1\r\n2\r\n3\r\n4\r\n5\x1b[2;4r");
		r.regionHome = cur(t);
		t.write("\x1b[4;1H\nx");
		r.regionLF = [lines(t), t.sb.length];
		t.write("\x1b[S");
		r.su = lines(t);
		t.write("\x1b[T");
		r.sd = lines(t);
		t.write("\x1b[2;1H\x1bMy");
		r.ri = lines(t);
		t.write("\x1b[r\x1b[5;1H\x1bDz\x1bEw");
		r.indNel = [lines(t), t.sb.length, t.lineText(-1), cur(t)];

		// Save and restore the cursor, ESC 7/8 and CSI s/u, with attributes.
		t = mk();
		t.write("\x1b[2;3H\x1b[1m\x1b7\x1b[0m\x1b[4;9H\x1b8X\x1b[3;5H\x1b[s\x1b[H\x1b[u");
		r.saveRestore = [cur(t), t.cell(2, 1).fl];

		// SGR: bold, dim, italic, underline, inverse, 16/256/truecolour, reset.
		t = mk(12, 1);
		t.write("\x1b[1;2;3;4;7;31;42ma\x1b[22;23;24;27;39;49m\x1b[91;104mb\x1b[38;5;196;48;5;21mc\x1b[38;2;1;2;255;48:2::16:32:48md\x1b[38:5:3mx\x1b[0me\x1b[1mf\x1b[mg");
		r.sgr = [0, 1, 2, 3, 4, 5, 6, 7].map((x) => { const c = t.cell(x, 0); return [c.ch, c.fg, c.bg, c.fl]; });

		// Modes: application cursor keys, cursor visibility, bracketed paste.
		t = mk();
		t.write("\x1b[?1h\x1b[?25l\x1b[?2004h");
		r.modes = [t.m.appCursor, t.m.cursor, t.m.paste];
		t.write("\x1b[?1l\x1b[?25h\x1b[?2004l");
		r.modesOff = [t.m.appCursor, t.m.cursor, t.m.paste];

		// DSR: the cursor position report and status go to onData.
		t = mk();
		t.write("\x1b[3;7H\x1b[6n\x1b[5n");
		r.dsr = t.sent;

		// OSC title, DCS, unknown CSI and ESC sequences are swallowed whole.
		t = mk(20, 2);
		t.write("a\x1b]0;my title\x07b\x1b]2;t2\x1b\\c\x1bP1$r\x1b\\d\x1b[>4;1m\x1b[?1000h\x1b[5 qe\x1b#8f\x1b(0qx\x1b(Bq\x1b[99zg\x1b=\x1b>h");
		r.swallow = lines(t)[0];

		// The alternate screen (1049): vi draws full-screen with a scroll
		// region and leaves; the shell's screen and cursor come back.
		t = mk(10, 4);
		t.write("$ vi f\r\n");
		const before = [lines(t), cur(t)];
		t.write("\x1b[?1049h\x1b[H\x1b[2J\x1b[1;3r\x1b[1;1Hline one\x1b[2;1H~\x1b[3;1H~\x1b[r\x1b[4;1H\x1b[7m\"f\" 1L\x1b[m\x1b[1;5H");
		const inAlt = [lines(t), cur(t), t.inAlt, t.cell(0, 3).fl];
		t.write("\x1b[4;1H\x1b[K\x1b[?1049l");
		r.alt = [before, inAlt, [lines(t), cur(t), t.inAlt], t.sb.length];
		t.write("\x1b[?47h\x1b[2Jalt\x1b[?47l");
		r.alt47 = lines(t);

		// Scrollback: lines scrolled off the normal screen, capped.
		t = mk(8, 3);
		for (let i = 0; i < 1100; i++) t.write("l" + i + "\r\n");
		r.scrollback = [t.sb.length, t.lineText(-1), t.lineText(-1000)];

		// Resize keeps the cursor's line and reports the new size.
		t = mk(10, 4);
		let sized = null;
		t.onResize = (c, rr) => { sized = [c, rr]; };
		t.write("a\r\nb\r\nc\r\nd");
		t.resize(6, 2);
		r.resize = [lines(t), cur(t), sized, t.sb.map((l) => l.c.join("").trim())];

		// Random bytes (a fixed seed; escape-heavy) with resizes between
		// chunks: nothing throws, the cursor and every line stay in bounds,
		// and after CAN the parser is on the ground state again.
		t = mk(20, 6);
		let seed = 42;
		const rnd = (n) => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n; };
		const alphabet = "\x1b\x1b\x1b[[[;;;?0123456789HJKLMPSTXdfhlmnrsu@ABCDEFG\x07\x08\n\r\t]\\P78DEM(0Bé€😀 a";
		let bad = 0;
		for (let k = 0; k < 400; k++) {
			let chunk = "";
			for (let i = 0; i < 500; i++) chunk += alphabet[rnd(alphabet.length)];
			const bytes = new TextEncoder().encode(chunk);
			t.write(bytes.subarray(rnd(3))); // start mid-character now and then
			if (k % 50 === 0) t.resize(5 + rnd(40), 2 + rnd(20));
			const ok = t.x >= 0 && t.x < t.cols && t.y >= 0 && t.y < t.rows && t.lines.length === t.rows &&
				t.lines.every((l) => l.c.length === t.cols && l.a.length === t.cols) && t.top <= t.bot && t.bot < t.rows;
			if (!ok) bad++;
		}
		t.write("\x18\x1b[?1049l\x1b[0m\x1b[r\x1b[H\x1b[2Jok");
		r.random = [bad, t.lineText(0)];

		// The view: open in the page, render, type through the keyboard.
		const box = document.createElement("div");
		box.className = "console";
		document.body.append(box);
		t = mk();
		t.open(box);
		t.write("\x1b[31mred\x1b[0m plain");
		t.render();
		const row = box.querySelector(".term-grid > div");
		r.dom = [t.cols > 20, t.rows > 10, row.textContent.trimEnd(), row.firstChild.style.color, box.querySelector(".tc").style.background, box.querySelector(".tc") !== null,
			box.querySelector(".term-grid").getAttribute("role"),
			box.querySelector(".term-grid > div:last-child").getBoundingClientRect().bottom <= t.el.getBoundingClientRect().bottom, box.querySelector("textarea").getAttribute("aria-label")];
		const key = (key, o = {}) => t.input.dispatchEvent(new KeyboardEvent("keydown", { key, bubbles: true, cancelable: true, ...o }));
		t.sent.length = 0;
		key("Enter"); key("Backspace"); key("ArrowUp"); t.write("\x1b[?1h"); key("ArrowUp"); key("c", { ctrlKey: true });
		key("b", { altKey: true }); key("Delete"); key("PageUp"); key("F1");
		key("@", { ctrlKey: true, altKey: true, modifierAltGraph: true }); // AltGr+Q on a German keyboard: text, not ^@
		key("Tab");
		r.keys = t.sent.slice();
		// The wheel scrolls back through lines gone off the top; typing
		// returns to the bottom.
		t.write("\x1b[2J\x1b[H");
		for (let i = 0; i < t.rows + 10; i++) t.write("\r\nline " + i);
		const wheel = (deltaY) => t.el.dispatchEvent(new WheelEvent("wheel", { deltaY, bubbles: true, cancelable: true }));
		const first = () => { t.render(); return box.querySelector(".term-grid > div").textContent.trimEnd(); };
		const bottom = first();
		const notPrevented = wheel(-100);
		const back = first();
		wheel(-100000);
		const top = [first(), t.view === t.sb.length];
		key("x", { ctrlKey: true });
		r.wheel = [bottom, notPrevented, back, top[1], first() === bottom];
		// Out of the page (its view redrawn), it keeps its size and lines.
		const size = [t.cols, t.rows];
		box.remove();
		t.fit();
		r.detached = [t.cols === size[0], t.rows === size[1], t.lineText(0)];
		return r;
	})()`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	blank := func(n int) []any {
		l := make([]any, n)
		for i := range l {
			l[i] = ""
		}
		return l
	}
	lines := func(s ...any) []any { return s }
	xy := func(x, y int) []any { return []any{float64(x), float64(y)} }
	want := map[string]any{
		"basic":       []any{lines("ac      X", "hi", "", ""), xy(2, 1)},
		"pendingWrap": xy(4, 0),
		"wrapped":     []any{lines("12345", "6", ""), xy(1, 1)},
		"noAutowrap":  "12346",
		"utf8":        []any{"aé€b", xy(4, 0)},
		"moves": []any{xy(3, 2), xy(3, 1), xy(3, 3), xy(6, 3), xy(1, 3), xy(8, 3), xy(8, 1), xy(0, 2), xy(0, 0),
			xy(9, 5), xy(0, 0), xy(0, 0)},
		"el0":         lines("abcdef", "gh", "mnopqr"),
		"el12":        lines("   def", "gh", ""),
		"ed1":         lines("", " h", ""),
		"ed0":         lines("a", "", ""),
		"ed2":         blank(3),
		"ich":         "a  bcd",
		"dch":         "acd",
		"ech":         "  d",
		"il":          lines("a", "", "b", "c", "d"),
		"dl":          lines("a", "c", "d", "", ""),
		"regionHome":  xy(0, 0),
		"regionLF":    []any{lines("1", "3", "4", "x", "5"), float64(0)},
		"su":          lines("1", "4", "x", "", "5"),
		"sd":          lines("1", "", "4", "x", "5"),
		"ri":          lines("1", "y", "", "4", "5"),
		"indNel":      []any{lines("", "4", "5", "z", "w"), float64(2), "y", xy(1, 4)},
		"saveRestore": []any{xy(4, 2), float64(1)},
		"sgr": []any{
			[]any{"a", float64(1), float64(2), float64(31)},
			[]any{"b", float64(9), float64(12), float64(0)},
			[]any{"c", float64(196), float64(21), float64(0)},
			[]any{"d", "#0102ff", "#102030", float64(0)},
			[]any{"x", float64(3), "#102030", float64(0)},
			[]any{"e", float64(-1), float64(-1), float64(0)},
			[]any{"f", float64(-1), float64(-1), float64(1)},
			[]any{"g", float64(-1), float64(-1), float64(0)},
		},
		"modes":    []any{true, false, true},
		"modesOff": []any{false, true, false},
		"dsr":      []any{"\x1b[3;7R", "\x1b[0n"},
		"swallow":  "abcdef─│qgh",
		"alt": []any{
			[]any{lines("$ vi f", "", "", ""), xy(0, 1)},
			[]any{lines("line one", "~", "~", `"f" 1L`), xy(4, 0), true, float64(16)},
			[]any{lines("$ vi f", "", "", ""), xy(0, 1), false},
			float64(0),
		},
		"alt47":      lines("$ vi f", "", "", ""),
		"scrollback": []any{float64(1000), "l1097", "l98"},
		"resize":     []any{lines("c", "d"), xy(1, 1), []any{float64(6), float64(2)}, []any{"a", "b"}},
		"dom":        []any{true, true, "red plain", "var(--t1)", "var(--term-fg)", true, "log", true, "Terminal input"},
		"wheel":      []any{"line 10", false, "line 5", true, true},
		"detached":   []any{true, true, "line 10"},
		"random":     []any{float64(0), "ok"},
		"keys":       []any{"\r", "\x7f", "\x1b[A", "\x1bOA", "\x03", "\x1bb", "\x1b[3~", "\x1b[5~", "\x1bOP", "\t"},
	}
	for k, w := range want {
		if !reflect.DeepEqual(got[k], w) {
			t.Errorf("%s:\n got %#v\nwant %#v", k, got[k], w)
		}
	}
	for _, pr := range problems() {
		t.Errorf("page error: %s", pr)
	}
}
