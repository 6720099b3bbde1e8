// dom.js — building DOM without innerHTML (so object names can never
// inject markup), and formatting of quantities, ages and figures.

// h creates an element: h("a", {href: "#/"}, "text", child, [more]).
// Attributes starting with "on" are listeners; false/null ones are left out.
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

const SVG_NS = "http://www.w3.org/2000/svg";
export function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

function setAttrs(el, attrs) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === false || v === null || v === undefined) continue;
    if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
    else if (k === "value") el.value = v;
    else el.setAttribute(k, v === true ? "" : String(v));
  }
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

// Quantities, as Kubernetes writes them: "100m", "0.5", "64Mi", "1G", "1e3".
const SUFFIX = {
  n: 1e-9, u: 1e-6, m: 1e-3, "": 1, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18,
  Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50, Ei: 2 ** 60,
};
export function quantity(q) {
  if (q === undefined || q === null || q === "") return 0;
  if (typeof q === "number") return q;
  const m = /^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)([a-zA-Z]*)$/.exec(String(q).trim());
  if (!m || !(m[2] in SUFFIX)) return 0;
  return parseFloat(m[1]) * SUFFIX[m[2]];
}

export function fmtCPU(cores) {
  if (cores >= 10) return cores.toFixed(0);
  if (cores >= 1) return String(Math.round(cores * 100) / 100);
  return Math.round(cores * 1000) + "m";
}

export function fmtBytes(b) {
  const units = ["B", "Ki", "Mi", "Gi", "Ti", "Pi"];
  let i = 0;
  while (Math.abs(b) >= 1024 && i < units.length - 1) { b /= 1024; i++; }
  return (Math.abs(b) >= 100 || i === 0 ? Math.round(b) : Math.round(b * 10) / 10) + units[i];
}

// age formats the time since an RFC 3339 timestamp as kubectl does.
export function age(ts, now = Date.now()) {
  if (!ts) return "—";
  let sec = Math.max(0, Math.floor((now - Date.parse(ts)) / 1000));
  if (sec < 120) return sec + "s";
  const min = Math.floor(sec / 60);
  if (min < 10) return `${min}m${sec % 60 ? (sec % 60) + "s" : ""}`;
  if (min < 180) return min + "m";
  const hr = Math.floor(min / 60);
  if (hr < 48) return `${hr}h${min % 60 ? (min % 60) + "m" : ""}`;
  return Math.floor(hr / 24) + "d";
}

// podRequests sums a pod's container requests (or its largest init
// container's, when larger): {cpu: cores, memory: bytes}.
export function podRequests(pod) {
  const sum = { cpu: 0, memory: 0 };
  const req = (c) => (c.resources && c.resources.requests) || {};
  for (const c of pod.spec.containers || []) {
    sum.cpu += quantity(req(c).cpu);
    sum.memory += quantity(req(c).memory);
  }
  for (const c of pod.spec.initContainers || []) {
    sum.cpu = Math.max(sum.cpu, quantity(req(c).cpu));
    sum.memory = Math.max(sum.memory, quantity(req(c).memory));
  }
  return sum;
}

export function terminal(pod) {
  const p = pod.status && pod.status.phase;
  return p === "Succeeded" || p === "Failed";
}

// bar draws requested against allocatable, with the figures as text so
// that it reads without colour and to screen readers.
export function bar(used, total, fmt, label) {
  const pct = total > 0 ? Math.min(100, (used / total) * 100) : 0;
  const fill = h("span", { class: "fill" + (pct >= 90 ? " hot" : pct >= 70 ? " warm" : "") });
  fill.style.width = pct.toFixed(1) + "%";
  // A node that never reported its allocatable has no figure to show.
  const text = total > 0 ? `${fmt(used)} / ${fmt(total)}` : used ? fmt(used) + " / not reported" : "not reported";
  return h("div", { class: "bar", role: "meter", "aria-label": label, "aria-valuemin": 0, "aria-valuemax": 100, "aria-valuenow": Math.round(pct), "aria-valuetext": `${text} (${Math.round(pct)}%)` },
    h("span", { class: "track" }, fill), h("span", { class: "bar-text" }, text));
}

// badge is a coloured label; tone is ok, warn, bad or muted.
export function badge(text, tone = "muted", title) {
  return h("span", { class: "badge " + tone, title }, text);
}

const PHASE_TONE = { Running: "ok", Succeeded: "muted", Pending: "warn", Failed: "bad", Unknown: "bad" };
export function phaseBadge(phase, deleting) {
  if (deleting) return badge("Terminating", "warn");
  return badge(phase || "Unknown", PHASE_TONE[phase] || "muted");
}

// table builds a responsive table: cols are header labels, rows arrays of
// cells. An empty table says so.
export function table(caption, cols, rows, empty = "None.") {
  if (!rows.length) return h("p", { class: "empty" }, empty);
  return h("div", { class: "table-wrap", tabindex: 0, role: "region", "aria-label": caption },
    h("table", null,
      h("caption", { class: "sr-only" }, caption),
      h("thead", null, h("tr", null, cols.map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", null, rows.map((r) => h("tr", null, r.map((c, i) => h("td", { "data-label": cols[i] }, c)))))));
}

// dl renders pairs as a definition list.
export function dl(pairs) {
  return h("dl", { class: "facts" }, pairs.filter(Boolean).map(([k, v]) => [h("dt", null, k), h("dd", null, v === "" || v === undefined ? "—" : v)]));
}

export function chips(obj) {
  const e = Object.entries(obj || {});
  if (!e.length) return "—";
  return h("span", { class: "chips" }, e.map(([k, v]) => h("code", { class: "chip" }, v === "" ? k : `${k}=${v}`)));
}
