// console.js — an interactive shell in a pod's container, over the exec
// WebSocket (Kubernetes' v5.channel.k8s.io channel protocol: each binary
// message is a channel byte, then data; 0 stdin, 1 stdout, 2 stderr, 3
// the exit Status, 4 the terminal size). The terminal is term.js, our
// own small emulator. Browsers cannot put
// headers on a WebSocket, so the token travels as a subprotocol
// (base64url.bearer.authorization.k8s.io.…, as Kubernetes reads it):
// never in the URL.
import { h } from "./dom.js";
import * as api from "./api.js";
import { Terminal } from "./term.js";

const CH_STDIN = 0, CH_STDOUT = 1, CH_STDERR = 2, CH_STATUS = 3, CH_RESIZE = 4;

function b64url(s) {
  const bytes = new TextEncoder().encode(s);
  let bin = "";
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

// session opens a shell in container and wires it to a terminal in box.
// It returns a close function; onEnd runs once when the session ends.
async function session(ns, name, container, box, say, onEnd) {
  box.textContent = "";
  let resize = () => {}, input = () => {};
  const term = new Terminal({ onData: (d) => input(d), onResize: () => resize() });
  term.open(box);
  const q = new URLSearchParams({ container, stdin: "true", stdout: "true", tty: "true" });
  for (const c of ["sh", "-c", "command -v bash >/dev/null 2>&1 && exec bash || exec sh"]) q.append("command", c);
  const scheme = location.protocol === "https:" ? "wss:" : "ws:";
  const ws = new WebSocket(`${scheme}//${location.host}/api/v1/namespaces/${api.enc(ns)}/pods/${api.enc(name)}/exec?${q}`,
    ["v5.channel.k8s.io", "base64url.bearer.authorization.k8s.io." + b64url(api.token())]);
  ws.binaryType = "arraybuffer";
  const enc = new TextEncoder();
  const send = (ch, bytes) => {
    if (ws.readyState !== WebSocket.OPEN) return;
    const m = new Uint8Array(bytes.length + 1);
    m[0] = ch;
    m.set(bytes, 1);
    ws.send(m);
  };
  resize = () => send(CH_RESIZE, enc.encode(JSON.stringify({ Width: term.cols, Height: term.rows })));
  input = (d) => send(CH_STDIN, enc.encode(d));
  let status = null, ended = false;
  ws.addEventListener("open", () => { say(`Connected to ${container}.`); resize(); term.focus(); });
  ws.addEventListener("message", (ev) => {
    const b = new Uint8Array(ev.data);
    if (!b.length) return;
    if (b[0] === CH_STDOUT || b[0] === CH_STDERR) term.write(b.subarray(1));
    else if (b[0] === CH_STATUS) {
      try { status = JSON.parse(new TextDecoder().decode(b.subarray(1))); } catch { status = { message: "unreadable exit status" }; }
    }
  });
  ws.addEventListener("close", () => {
    if (ended) return;
    ended = true;
    term.dispose();
    if (status) say(status.status === "Success" ? "The shell exited." : status.message || "The shell failed.");
    else say("Could not open a shell: the pod's node may be unreachable, or the container not running.", true);
    onEnd();
  });
  return () => { if (ws.readyState <= WebSocket.OPEN) ws.close(); };
}

// consolePanel is the pod page's console: pick a container, open a shell.
// The panel's stop() ends a running session (when the page is left).
export function consolePanel(ns, name, containers) {
  const box = h("div", { class: "console", id: "console", "aria-label": "Container shell" });
  const sel = h("select", { id: "console-container" }, containers.map((c) => h("option", { value: c }, c)));
  const btn = h("button", { type: "button", id: "console-start" }, "Open shell");
  const msg = h("span", { id: "console-status", class: "muted small", role: "status", "aria-live": "polite" });
  const say = (text, bad) => { msg.textContent = text; msg.classList.toggle("error", !!bad); };
  let close = null;
  btn.addEventListener("click", async () => {
    if (close) { close(); return; }
    btn.textContent = "Close";
    say("Opening…");
    try {
      close = await session(ns, name, sel.value, box, say, () => { close = null; btn.textContent = "Open shell"; });
    } catch (err) {
      say(err.message, true);
      btn.textContent = "Open shell";
    }
  });
  const panel = h("div", { class: "console-panel" },
    h("div", { class: "toolbar" },
      containers.length > 1 ? [h("label", { for: "console-container" }, "Container "), sel] : null, btn, msg),
    box);
  panel.stop = () => { if (close) close(); };
  return panel;
}
