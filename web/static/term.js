// term.js — a small terminal emulator for the pod console: a VT500-style
// parser (ground, escape, CSI, OSC and string states; unknown sequences
// are swallowed whole), a screen model (normal screen with scrollback,
// alternate screen, scroll region, deferred wrap) and a DOM view of one
// <div> per row, of which only changed rows are rebuilt, once per
// animation frame. It covers what busybox sh, vi, less and top emit.
// Every cell is one column wide (no double-width glyphs).

const SB_MAX = 1000;
const attrs = new Map();
// attr interns {fg, bg, fl}: colours are -1 (default), 0–255 or "#rrggbb";
// fl holds bold 1, dim 2, italic 4, underline 8, inverse 16, strike 32,
// hidden 64. Cells share attr objects, so runs compare by identity.
function attr(fg, bg, fl) {
  const k = `${fg},${bg},${fl}`;
  let a = attrs.get(k);
  if (!a) attrs.set(k, (a = { fg, bg, fl }));
  return a;
}
const PLAIN = attr(-1, -1, 0);
// DEC special graphics (ESC ( 0), for line drawing.
const GFX = { "`": "◆", a: "▒", j: "┘", k: "┐", l: "┌", m: "└", n: "┼", q: "─", t: "├", u: "┤", v: "┴", w: "┬", x: "│", "~": "·" };

const num = (v) => Math.min(parseInt(v, 10) || 0, 65535);

function blank(cols, a = PLAIN) {
  return { c: Array(cols).fill(" "), a: Array(cols).fill(a), v: 0, w: false };
}

// c256 is the CSS colour of xterm palette entry n (16–255).
function c256(n) {
  if (n >= 232) { const g = (8 + (n - 232) * 10).toString(16).padStart(2, "0"); return "#" + g + g + g; }
  n -= 16;
  const s = (v) => (v ? 55 + v * 40 : 0).toString(16).padStart(2, "0");
  return "#" + s(Math.floor(n / 36)) + s(Math.floor(n / 6) % 6) + s(n % 6);
}

export class Terminal {
  // opts: cols, rows, onData(string) for input and replies, onResize(cols, rows).
  constructor(opts = {}) {
    this.onData = opts.onData || (() => {});
    this.onResize = opts.onResize || (() => {});
    this.cols = opts.cols || 80;
    this.rows = opts.rows || 24;
    this.dec = new TextDecoder();
    this.sb = [];
    this.spare = [];
    this.view = 0; // lines scrolled back
    this.reset();
  }

  reset() {
    this.normal = this.screen();
    this.alt = this.screen();
    this.lines = this.normal;
    this.inAlt = false;
    this.x = this.y = 0;
    this.top = 0; this.bot = this.rows - 1;
    this.a = PLAIN;
    this.m = { wrap: true, appCursor: false, cursor: true, paste: false, insert: false, origin: false };
    this.pending = false;
    this.gfx = false;
    this.saved = null;
    this.st = 0; this.p = ""; this.pre = ""; this.mid = ""; this.osc = "";
    this.dirty();
  }

  screen() { return Array.from({ length: this.rows }, () => blank(this.cols)); }

  // write feeds output bytes (Uint8Array, split anywhere) or a string.
  write(data) {
    const s = typeof data === "string" ? data : this.dec.decode(data, { stream: true });
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i);
      // Printable ASCII on the ground state, the bulk of output, skips feed.
      if (this.st === 0 && c >= 0x20 && c < 0x7f && !this.gfx) this.print(s[i]);
      else if (c >= 0xd800 && c < 0xdc00 && i + 1 < s.length) this.feed(s[i] + s[++i]);
      else this.feed(s[i]);
    }
    this.dirty();
  }

  // feed is the parser: st 0 ground, 1 escape, 2 escape intermediate,
  // 3 CSI, 4 OSC, 5 string (DCS/SOS/PM/APC), 6 ESC inside OSC/string.
  feed(ch) {
    const c = ch.codePointAt(0);
    if (c === 0x18 || c === 0x1a) { this.st = 0; return; }
    if (this.st === 4 || this.st === 5) {
      if (c === 0x07 && this.st === 4) this.st = 0;
      else if (c === 0x1b) this.st = 6;
      else if (this.st === 4 && this.osc.length < 512) this.osc += ch;
      return;
    }
    if (this.st === 6) { this.st = 0; if (ch !== "\\") this.feed(ch); return; }
    if (c === 0x1b) { this.st = 1; this.mid = ""; return; }
    if (c < 0x20 || c === 0x7f) { this.control(c); return; }
    switch (this.st) {
      case 0: this.print(ch); return;
      case 1:
        if (ch === "[") { this.st = 3; this.p = ""; this.pre = ""; this.mid = ""; return; }
        if (ch === "]") { this.st = 4; this.osc = ""; return; }
        if ("PX^_".includes(ch)) { this.st = 5; return; }
        if (c < 0x30) { this.mid = ch; this.st = 2; return; }
        this.st = 0;
        this.esc(ch);
        return;
      case 2:
        if (c < 0x30) { this.mid += ch; return; }
        this.st = 0;
        if (this.mid === "(") this.gfx = ch === "0";
        return;
      case 3:
        if (c >= 0x30 && c <= 0x3b) { if (this.p.length < 256) this.p += ch; return; }
        if (c >= 0x3c && c <= 0x3f) { this.pre += ch; return; }
        if (c < 0x30) { this.mid += ch; return; }
        this.st = 0;
        if (c <= 0x7e) this.csi(ch, this.p.split(";").map((v) => num(v.split(":")[0])));
    }
  }

  control(c) {
    switch (c) {
      case 8: if (this.x > 0) this.x--; this.pending = false; break;
      case 9: this.x = Math.min(this.cols - 1, (Math.floor(this.x / 8) + 1) * 8); this.pending = false; break;
      case 10: case 11: case 12: this.index(); break;
      case 13: this.x = 0; this.pending = false; break;
    }
  }

  esc(ch) {
    switch (ch) {
      case "7": this.save(); break;
      case "8": this.restore(); break;
      case "D": this.index(); break;
      case "E": this.x = 0; this.index(); break;
      case "M": this.pending = false; if (this.y === this.top) this.scrollDown(1); else if (this.y > 0) this.y--; break;
      case "c": this.reset(); this.sb = []; break;
    }
  }

  print(ch) {
    if (this.gfx && GFX[ch]) ch = GFX[ch];
    if (this.pending) {
      this.pending = false;
      this.lines[this.y].w = true;
      this.x = 0;
      this.index();
    }
    const l = this.lines[this.y];
    if (this.m.insert) { l.c.splice(this.x, 0, ch); l.a.splice(this.x, 0, this.a); l.c.length = l.a.length = this.cols; }
    l.c[this.x] = ch;
    l.a[this.x] = this.a;
    l.v++;
    if (this.x < this.cols - 1) this.x++;
    else this.pending = this.m.wrap;
  }

  // index moves down a line, scrolling the region at its bottom.
  index() {
    this.pending = false;
    if (this.y === this.bot) this.scrollUp(1);
    else if (this.y < this.rows - 1) this.y++;
  }

  // ea is the attr erased cells get: the current background only.
  ea() { return this.a.bg === -1 ? PLAIN : attr(-1, this.a.bg, 0); }

  // fresh is a blank line, recycled from lines dropped off the scrollback
  // or the screen (streaming output then allocates nothing).
  fresh() {
    const l = this.spare.pop(), a = this.ea();
    if (!l || l.c.length !== this.cols) return blank(this.cols, a);
    l.c.fill(" "); l.a.fill(a); l.v++; l.w = false;
    return l;
  }
  drop(l) { if (this.spare.length < 64) this.spare.push(l); }
  blanks(n) { return Array.from({ length: n }, () => this.fresh()); }

  scrollUp(n, top = this.top) {
    n = Math.min(n, this.bot - top + 1);
    const gone = this.lines.splice(top, n);
    this.lines.splice(this.bot - n + 1, 0, ...this.blanks(n));
    if (!this.inAlt && top === 0) {
      for (const l of gone) this.sb.push(l);
      while (this.sb.length > SB_MAX) this.drop(this.sb.shift()); // O(1) in V8: left-trimmed in place
      if (this.view) this.view = Math.min(this.view + n, this.sb.length);
    } else gone.forEach((l) => this.drop(l));
  }

  scrollDown(n, top = this.top) {
    n = Math.min(n, this.bot - top + 1);
    this.lines.splice(this.bot - n + 1, n).forEach((l) => this.drop(l));
    this.lines.splice(top, 0, ...this.blanks(n));
  }

  erase(l, from, to) {
    const a = this.ea();
    for (let i = Math.max(0, from); i < Math.min(to, this.cols); i++) { l.c[i] = " "; l.a[i] = a; }
    l.v++;
  }

  save() { this.saved = { x: this.x, y: this.y, a: this.a, gfx: this.gfx, origin: this.m.origin, pending: this.pending }; }
  restore() {
    const s = this.saved || { x: 0, y: 0, a: PLAIN, gfx: false, origin: false, pending: false };
    this.x = Math.min(s.x, this.cols - 1); this.y = Math.min(s.y, this.rows - 1);
    this.a = s.a; this.gfx = s.gfx; this.m.origin = s.origin; this.pending = s.pending;
  }

  // go moves the cursor, within the scroll region in origin mode.
  go(x, y) {
    const lo = this.m.origin ? this.top : 0, hi = this.m.origin ? this.bot : this.rows - 1;
    this.x = Math.max(0, Math.min(this.cols - 1, x));
    this.y = Math.max(lo, Math.min(hi, y + (this.m.origin ? this.top : 0)));
    this.pending = false;
  }

  csi(f, ps) {
    const n = ps[0] || 1, l = this.lines[this.y];
    const inRegion = this.y >= this.top && this.y <= this.bot;
    if (this.pre === "?") {
      if (f === "h" || f === "l") for (const p of ps) this.mode(p, f === "h");
      return;
    }
    if (this.pre || this.mid) return; // secondary DA, cursor style, …
    switch (f) {
      case "A": this.y = Math.max(this.y >= this.top ? this.top : 0, this.y - n); this.pending = false; break;
      case "B": this.y = Math.min(this.y <= this.bot ? this.bot : this.rows - 1, this.y + n); this.pending = false; break;
      case "C": case "a": this.x = Math.min(this.cols - 1, this.x + n); this.pending = false; break;
      case "D": this.x = Math.max(0, this.x - n); this.pending = false; break;
      case "E": this.csi("B", ps); this.x = 0; break;
      case "F": this.csi("A", ps); this.x = 0; break;
      case "G": case "`": this.x = Math.min(this.cols - 1, n - 1); this.pending = false; break;
      case "d": this.go(this.x, n - 1); break;
      case "e": this.csi("B", ps); break;
      case "H": case "f": this.go((ps[1] || 1) - 1, n - 1); break;
      case "J": {
        const p = ps[0], from = p === 0 ? this.y + 1 : 0, to = p === 1 ? this.y : this.rows;
        if (p === 0) this.erase(l, this.x, this.cols);
        if (p === 1) this.erase(l, 0, this.x + 1);
        if (p === 3) { this.sb = []; this.view = 0; break; }
        for (let y = from; y < to; y++) this.erase(this.lines[y], 0, this.cols);
        break;
      }
      case "K": {
        const p = ps[0];
        this.erase(l, p === 0 ? this.x : 0, p === 1 ? this.x + 1 : this.cols);
        break;
      }
      case "@": {
        const k = Math.min(n, this.cols - this.x);
        l.c.splice(this.x, 0, ...Array(k).fill(" ")); l.a.splice(this.x, 0, ...Array(k).fill(this.ea()));
        l.c.length = l.a.length = this.cols; l.v++;
        break;
      }
      case "P": {
        const k = Math.min(n, this.cols - this.x);
        l.c.splice(this.x, k); l.a.splice(this.x, k);
        l.c.push(...Array(k).fill(" ")); l.a.push(...Array(k).fill(this.ea())); l.v++;
        break;
      }
      case "X": this.erase(l, this.x, this.x + n); break;
      case "L": if (inRegion) { this.scrollDown(n, this.y); this.x = 0; } break;
      case "M": if (inRegion) { this.scrollUp(n, this.y); this.x = 0; } break;
      case "S": this.scrollUp(n); break;
      case "T": if (ps.length === 1) this.scrollDown(n); break;
      case "m": this.sgr(ps, this.p.includes(":") ? this.p.split(";") : null); break;
      case "r": {
        const t = (ps[0] || 1) - 1, b = (ps[1] || this.rows) - 1;
        if (t < b && b < this.rows) { this.top = t; this.bot = b; this.go(0, 0); }
        break;
      }
      case "s": this.save(); break;
      case "u": this.restore(); break;
      case "h": case "l": if (ps.includes(4)) this.m.insert = f === "h"; break;
      case "n":
        if (ps[0] === 6) this.onData(`\x1b[${this.y + 1 - (this.m.origin ? this.top : 0)};${this.x + 1}R`);
        else if (ps[0] === 5) this.onData("\x1b[0n");
        break;
      case "c": if (!ps[0]) this.onData("\x1b[?1;2c"); break;
    }
  }

  mode(p, on) {
    switch (p) {
      case 1: this.m.appCursor = on; break;
      case 6: this.m.origin = on; this.go(0, 0); break;
      case 7: this.m.wrap = on; break;
      case 25: this.m.cursor = on; break;
      case 2004: this.m.paste = on; break;
      case 47: case 1047: case 1049:
        if (on === this.inAlt) break;
        if (on) {
          if (p === 1049) this.save();
          this.inAlt = true;
          this.alt = this.screen();
          this.lines = this.alt;
          this.view = 0;
        } else {
          this.inAlt = false;
          this.lines = this.normal;
          if (p === 1049) this.restore();
        }
        break;
    }
  }

  // sgr: 38/48 colours come as 38;5;n or 38;2;r;g;b, or with colons
  // (38:5:n, 38:2:[space]:r:g:b), which raw (the groups) then holds.
  sgr(ps, raw) {
    let { fg, bg, fl } = this.a;
    for (let i = 0; i < ps.length; i++) {
      const p = ps[i], sub = raw ? raw[i].split(":").map(num) : [];
      if (p === 0) { fg = bg = -1; fl = 0; }
      else if (p >= 1 && p <= 9) fl |= [0, 1, 2, 4, 8, 0, 0, 16, 64, 32][p];
      else if (p === 21) fl |= 8;
      else if (p >= 22 && p <= 29) fl &= ~[3, 4, 8, 0, 0, 16, 64, 32][p - 22];
      else if (p >= 30 && p <= 37) fg = p - 30;
      else if (p >= 40 && p <= 47) bg = p - 40;
      else if (p >= 90 && p <= 97) fg = p - 82;
      else if (p >= 100 && p <= 107) bg = p - 92;
      else if (p === 39) fg = -1;
      else if (p === 49) bg = -1;
      else if (p === 38 || p === 48) {
        let c = -1;
        const rgb = (v) => "#" + v.map((x) => (x & 255).toString(16).padStart(2, "0")).join("");
        if (sub.length > 2) c = sub[1] === 5 ? sub[2] & 255 : sub[1] === 2 ? rgb(sub.slice(-3)) : -1;
        else if (ps[i + 1] === 5) { c = ps[i + 2] & 255; i += 2; }
        else if (ps[i + 1] === 2) {
          c = rgb(ps.slice(i + 2, i + 5));
          i += 4;
        }
        if (p === 38) fg = c; else bg = c;
      }
    }
    this.a = attr(fg, bg, fl);
  }

  resize(cols, rows) {
    cols = Math.max(2, cols | 0); rows = Math.max(2, rows | 0);
    if (cols === this.cols && rows === this.rows) return;
    for (const scr of [this.normal, this.alt]) {
      for (const l of scr) {
        l.c.length = l.a.length = cols;
        for (let i = this.cols; i < cols; i++) { l.c[i] = " "; l.a[i] = PLAIN; }
        l.v++;
      }
      while (scr.length > rows) {
        // Drop blank rows below the cursor first, then push rows off the top.
        const last = scr[scr.length - 1];
        if (scr === this.lines && this.y >= scr.length - 1 || last.c.join("").trim()) {
          const l = scr.shift();
          if (scr === this.normal) this.sb.push(l);
          if (scr === this.lines) this.y--;
        } else scr.pop();
      }
      while (scr.length < rows) scr.push(blank(cols));
    }
    if (this.sb.length > SB_MAX) this.sb.splice(0, this.sb.length - SB_MAX);
    this.cols = cols; this.rows = rows;
    this.top = 0; this.bot = rows - 1;
    this.x = Math.min(this.x, cols - 1); this.y = Math.max(0, Math.min(this.y, rows - 1));
    this.pending = false;
    this.dirty();
    this.onResize(cols, rows);
  }

  // lineText is row y of the screen (negative: scrollback), trailing blanks cut.
  lineText(y) {
    const l = y < 0 ? this.sb[this.sb.length + y] : this.lines[y];
    return l ? l.c.join("").replace(/ +$/, "") : "";
  }
  text() { return this.lines.map((_, y) => this.lineText(y)).join("\n").replace(/\n+$/, ""); }
  cell(x, y) { const l = this.lines[y]; return { ch: l.c[x], ...l.a[x] }; }

  // ---- the view ----

  // open builds the terminal in parent: a grid of rows and a textarea
  // that takes the keyboard. The grid fits the parent's size.
  open(parent) {
    const el = (tag, cls) => { const e = document.createElement(tag); e.className = cls; return e; };
    this.el = el("div", "term");
    this.grid = el("div", "term-grid");
    this.grid.setAttribute("role", "log");
    this.grid.setAttribute("aria-live", "off");
    this.input = el("textarea", "term-input");
    this.input.setAttribute("aria-label", "Terminal input");
    this.input.spellcheck = false;
    this.input.autocapitalize = "off";
    this.el.append(this.grid, this.input);
    parent.append(this.el);
    this.rowEls = [];
    const on = (t, ev, f) => t.addEventListener(ev, f);
    on(this.input, "keydown", (e) => this.key(e));
    // A key sent on keydown must not come again as text (Enter's newline).
    on(this.input, "keyup", () => { this.keyed = false; });
    // IME text is sent when its composition ends.
    const text = (e) => {
      if (e.isComposing) return;
      if (this.input.value && !this.keyed) this.send(this.input.value);
      this.input.value = "";
    };
    on(this.input, "input", text);
    on(this.input, "compositionend", text);
    on(this.input, "paste", (e) => {
      e.preventDefault();
      const t = e.clipboardData.getData("text/plain").replace(/\r?\n/g, "\r");
      this.send(this.m.paste ? `\x1b[200~${t}\x1b[201~` : t);
    });
    on(this.el, "mouseup", () => { if (document.getSelection().isCollapsed) this.focus(); });
    // The wheel scrolls the scrollback, and the page once at either end.
    on(this.el, "wheel", (e) => {
      const v = this.view;
      if (!this.inAlt) this.scrollView(-Math.round(e.deltaY / 20) || (e.deltaY > 0 ? -1 : 1));
      if (this.view !== v) e.preventDefault();
    }, { passive: false });
    this.ro = new ResizeObserver(() => this.fit());
    this.ro.observe(this.el);
    this.fit();
    this.dirty();
  }

  // fit sizes the grid to the element from a measured character cell.
  // An element out of the page (a view being redrawn) measures 0: skip.
  fit() {
    if (!this.el.clientWidth || !this.el.clientHeight) return;
    // A row's height is the line box (a block), a cell's width a glyph's.
    const row = document.createElement("div"), probe = document.createElement("span");
    probe.textContent = "M".repeat(10);
    row.append(probe);
    this.grid.append(row);
    const w = probe.getBoundingClientRect().width / 10, h = row.getBoundingClientRect().height;
    row.remove();
    if (!w || !h) return;
    this.resize(Math.floor(this.el.clientWidth / w), Math.floor(this.el.clientHeight / h));
  }

  focus() { this.input?.focus({ preventScroll: true }); }

  dispose() {
    this.ro?.disconnect();
    this.disposed = true;
  }

  send(s) {
    if (this.disposed) return;
    if (this.view) { this.view = 0; this.dirty(); }
    this.onData(s);
  }

  scrollView(n) {
    this.view = Math.max(0, Math.min(this.sb.length, this.view + n));
    this.dirty();
  }

  key(e) {
    this.keyed = false;
    if (this.disposed || e.isComposing) return;
    const k = e.key, app = this.m.appCursor;
    const mod = 1 + (e.shiftKey ? 1 : 0) + (e.altKey ? 2 : 0) + (e.ctrlKey ? 4 : 0);
    const arrow = { ArrowUp: "A", ArrowDown: "B", ArrowRight: "C", ArrowLeft: "D", Home: "H", End: "F" }[k];
    const tilde = { Insert: 2, Delete: 3, PageUp: 5, PageDown: 6, F5: 15, F6: 17, F7: 18, F8: 19, F9: 20, F10: 21, F11: 23, F12: 24 }[k];
    let s = null;
    if (e.shiftKey && (k === "PageUp" || k === "PageDown")) { this.scrollView(k === "PageUp" ? this.rows - 1 : 1 - this.rows); e.preventDefault(); return; }
    if (e.ctrlKey && e.shiftKey && k === "V") return; // the browser's paste
    if (arrow) s = mod > 1 ? `\x1b[1;${mod}${arrow}` : (app ? "\x1bO" : "\x1b[") + arrow;
    else if (tilde) s = mod > 1 ? `\x1b[${tilde};${mod}~` : `\x1b[${tilde}~`;
    else if (/^F[1-4]$/.test(k)) s = "\x1bO" + "PQRS"[k[1] - 1];
    else if (k === "Enter") s = "\r";
    else if (k === "Backspace") s = e.ctrlKey ? "\b" : "\x7f";
    else if (k === "Tab") s = e.shiftKey ? "\x1b[Z" : "\t";
    else if (k === "Escape") s = "\x1b";
    else if (e.getModifierState("AltGraph")) return; // a layout's third level: text
    else if (e.ctrlKey && !e.metaKey && k.length === 1) {
      const c = k.toUpperCase().charCodeAt(0);
      if (c >= 64 && c <= 95) s = String.fromCharCode(c - 64);
      else if (k === " " || k === "2") s = "\0";
      else if (k === "/") s = "\x1f";
      if (s && e.altKey) s = "\x1b" + s;
    } else if (e.altKey && !e.metaKey && k.length === 1) s = "\x1b" + k;
    if (s === null) return;
    if (e.altKey && (arrow || tilde) === undefined && s[0] !== "\x1b") s = "\x1b" + s;
    e.preventDefault();
    this.keyed = true;
    this.send(s);
  }

  dirty() {
    if (!this.el || this.raf) return;
    this.raf = requestAnimationFrame(() => { this.raf = 0; this.render(); });
  }

  // render rebuilds the rows whose line, content or cursor changed.
  render() {
    if (!this.el) return;
    while (this.rowEls.length < this.rows) { const d = document.createElement("div"); this.grid.append(d); this.rowEls.push(d); }
    while (this.rowEls.length > this.rows) this.rowEls.pop().remove();
    const cur = this.m.cursor && !this.view ? this.y : -1;
    for (let y = 0; y < this.rows; y++) {
      const i = this.sb.length - this.view + y;
      const l = i < this.sb.length ? this.sb[i] : this.lines[i - this.sb.length];
      const d = this.rowEls[y], cx = y === cur ? this.x : -1;
      if (d.l === l && d.v === l.v && d.cx === cx) continue;
      d.l = l; d.v = l.v; d.cx = cx;
      this.row(d, l, cx);
    }
  }

  row(d, l, cx) {
    const parts = [];
    let i = 0;
    while (i < l.c.length) {
      const a = l.a[i];
      let j = i + 1;
      if (i !== cx) while (j < l.c.length && j !== cx && l.a[j] === a) j++;
      const t = l.c.slice(i, j).join("");
      if (a === PLAIN && i !== cx) parts.push(t);
      else {
        const s = document.createElement("span");
        s.textContent = t;
        this.paint(s, a, i === cx);
        parts.push(s);
      }
      i = j;
    }
    d.replaceChildren(...parts);
  }

  // paint styles a run. Colours are set through the CSSOM (which the
  // page's CSP allows); the 16 ANSI colours and the defaults are the
  // theme's CSS variables (--t0…--t15, --term-fg, --term-bg).
  paint(s, a, cursor) {
    let { fg, bg } = a;
    const cls = [];
    if (a.fl & 1) cls.push("tb");
    if (a.fl & 2) cls.push("td");
    if (a.fl & 4) cls.push("ti");
    if (a.fl & 8) cls.push("tu");
    if (a.fl & 32) cls.push("ts");
    if (a.fl & 64) cls.push("th");
    if (!(a.fl & 16) !== !cursor) {
      [fg, bg] = [bg, fg];
      if (fg === -1) fg = "var(--term-bg)";
      if (bg === -1) bg = "var(--term-fg)";
    }
    const css = (c) => (typeof c === "string" ? c : c < 16 ? `var(--t${c})` : c256(c));
    if (fg !== -1) s.style.color = css(fg);
    if (bg !== -1) s.style.background = css(bg);
    if (cursor) cls.push("tc");
    s.className = cls.join(" ");
  }
}
