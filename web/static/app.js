// app.js — the dashboard's shell: login and logout, the live collections,
// the connection indicator, hash routing and rendering.
import * as api from "./api.js";
import { h } from "./dom.js";
import * as cluster from "./cluster.js";
import * as workloads from "./workloads.js";
import * as actions from "./actions.js";
import * as lists from "./lists.js";
import { edit } from "./edit.js";
import { initSearch } from "./search.js";
import * as detail from "./detail.js";

const ROUTES = [
  { re: /^\/$/, view: cluster.overview, nav: "/" },
  { re: /^\/nodes$/, view: cluster.nodes, nav: "/nodes" },
  { re: /^\/nodes\/([^/]+)$/, view: cluster.node, nav: "/nodes" },
  ...lists.routes,
  { re: /^\/edit\/([^/]+)\/([^/]+)\/([^/]+)$/, view: edit, nav: "" },
  { re: /^\/pods\/([^/]+)\/([^/]+)$/, view: workloads.pod, nav: "/workloads" },
  { re: /^\/(deployments|daemonsets|statefulsets|replicasets|jobs|cronjobs)\/([^/]+)\/([^/]+)$/, view: detail.view, nav: "/workloads" },
  { re: /^\/(services)\/([^/]+)\/([^/]+)$/, view: detail.view, nav: "/services" },
  { re: /^\/(persistentvolumeclaims)\/([^/]+)\/([^/]+)$/, view: detail.view, nav: "/persistentvolumeclaims" },
  { re: /^\/apply$/, view: actions.apply, nav: "/apply" },
  { re: /^\/join$/, view: actions.join, nav: "/join" },
];

// NAV lists the pages; shown(perms) says whether the token may use one.
const NAV = [
  ["/", "Overview", () => true],
  ["/nodes", "Nodes", (p) => p.listNodes],
  ["/workloads", "Workloads", () => true],
  ...lists.nav.map(([p, l]) => [p, l, () => true]),
  ["/apply", "Apply YAML", (p) => p.apply],
  ["/join", "Add node", (p) => p.admin], // join tokens are the admin's
];

// state is what every view reads: the live collections and what the
// token may do.
const state = { live: null, perms: null };
let current = null; // {view, params, nav}
let scheduled = false;

const $ = (id) => document.getElementById(id);

// startLive watches what the token may list: everything for an admin,
// one namespace for a service account bound there; the rest stays empty.
function startLive() {
  const p = state.perms;
  const scope = p.ns ? `/namespaces/${api.enc(p.ns)}` : "";
  const watch = (ok, path) => (ok ? new api.Collection(path) : new api.StaticCollection());
  state.live = {
    nodes: watch(p.listNodes, "/api/v1/nodes"),
    pods: watch(p.listPods, `/api/v1${scope}/pods`),
    deployments: watch(p.listDeployments, `/apis/apps/v1${scope}/deployments`),
    daemonsets: watch(p.listDaemonSets, `/apis/apps/v1${scope}/daemonsets`),
    namespaces: p.listNamespaces ? new api.Collection("/api/v1/namespaces")
      : new api.StaticCollection(p.ns ? [{ metadata: { name: p.ns } }] : []),
  };
  Object.values(state.live).forEach((c) => c.subscribe(onChange));
}

function stopLive() {
  if (!state.live) return;
  Object.values(state.live).forEach((c) => c.stop());
  state.live = null;
}

// onChange re-renders a view that shows live data when a collection
// changes.
function onChange() {
  if (current && current.view.live !== false) schedule();
}

// schedule re-renders the current view on the next frame.
export function schedule() {
  if (scheduled) return;
  scheduled = true;
  requestAnimationFrame(() => { scheduled = false; render(); });
}

function route() {
  const path = decodeURIComponent(location.hash.replace(/^#/, "")) || "/";
  for (const r of ROUTES) {
    const m = r.re.exec(path);
    if (m) return { view: r.view, params: m.slice(1), nav: r.nav };
  }
  return { view: cluster.overview, params: [], nav: "/" };
}

function navigate() {
  if (!api.token()) return;
  const next = route();
  if (current && current.view.leave) current.view.leave();
  current = next;
  $("toast").hidden = true; // a result belongs to the view it came from
  menu(false);
  if (current.view.enter) current.view.enter(ctx(), ...current.params);
  for (const a of document.querySelectorAll("#nav a")) {
    if (a.dataset.path === current.nav) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
  render();
  const title = document.querySelector("main h1");
  if (title) title.focus({ preventScroll: true });
  window.scrollTo(0, 0);
}

// menu opens or closes the navigation at a phone's width.
function menu(open) {
  document.body.classList.toggle("nav-open", open);
  $("menu").setAttribute("aria-expanded", String(open));
}

function ctx() { return { live: state.live, perms: state.perms, rerender: schedule, notify }; }

function render() {
  if (!current || !state.live) return;
  const main = $("main");
  const focused = document.activeElement && document.activeElement.id;
  const sel = focused && document.activeElement.selectionStart;
  let node;
  try {
    node = current.view.render(ctx(), ...current.params);
  } catch (err) {
    node = h("section", null, h("h1", { tabindex: -1 }, "Something went wrong"), h("p", { class: "error" }, String(err)));
  }
  main.replaceChildren(node);
  document.title = (main.querySelector("h1") || {}).textContent + " · skiff";
  if (focused) {
    const el = document.getElementById(focused);
    if (el) {
      el.focus({ preventScroll: true });
      if (typeof sel === "number" && el.setSelectionRange) try { el.setSelectionRange(sel, sel); } catch { /* not a text field */ }
    }
  }
}

// notify announces a result in the status line (and to screen readers).
export function notify(msg, tone = "ok") {
  const el = $("toast");
  el.className = "toast " + tone;
  el.textContent = msg;
  el.hidden = false;
  clearTimeout(notify.timer);
  notify.timer = setTimeout(() => { el.hidden = true; }, 6000);
}

function showConnection(st) {
  const el = $("conn");
  el.dataset.state = st;
  el.textContent = st === "live" ? "Live" : st === "lost" ? "Connection lost" : "Connecting…";
  el.title = st === "lost" ? "Reconnecting by itself; the figures shown may be out of date." : "";
}

function showLogin(message) {
  stopLive();
  if (current && current.view.leave) current.view.leave();
  current = null;
  $("app").hidden = true;
  $("login").hidden = false;
  $("login-error").textContent = message || "";
  $("token").value = "";
  $("token").focus();
}

async function login(ev) {
  ev.preventDefault();
  const t = $("token").value.trim();
  if (!t) { $("login-error").textContent = "Enter the admin token."; return; }
  api.setToken(t);
  try {
    // Any token the server accepts logs in; what it may do decides what
    // is shown.
    state.perms = await api.permissions();
  } catch (err) {
    api.clearToken();
    $("login-error").textContent = err.code === 401 ? "That token is not valid." : "Cannot reach the server: " + err.message;
    return;
  }
  enter();
}

async function enter() {
  if (!state.perms) {
    try {
      state.perms = await api.permissions();
    } catch (err) {
      if (err.code !== 401) showLogin("Cannot reach the server: " + err.message);
      return; // a 401 shows the login form by itself
    }
  }
  $("nav").replaceChildren(...NAV.filter(([, , shown]) => shown(state.perms)).map(([p, label]) => h("a", { href: "#" + p, "data-path": p }, label)));
  $("who").textContent = state.perms.user + (state.perms.ns ? ` (namespace ${state.perms.ns})` : "");
  $("login").hidden = true;
  $("app").hidden = false;
  startLive();
  navigate();
}

function logout() {
  api.clearToken();
  state.perms = null;
  showLogin("Logged out.");
}

function init() {
  $("login-form").addEventListener("submit", login);
  $("logout").addEventListener("click", logout);
  $("menu").addEventListener("click", () => menu(!document.body.classList.contains("nav-open")));
  $("nav").addEventListener("click", () => menu(false));
  initSearch(() => state.live || {});
  // The skip link must not change the hash, which is the route.
  document.querySelector(".skip").addEventListener("click", (e) => { e.preventDefault(); $("main").focus(); });
  api.setUnauthorizedHandler(() => { if (api.token()) { api.clearToken(); state.perms = null; showLogin("The server refused the token; log in again."); } });
  api.onConnection(showConnection);
  window.addEventListener("hashchange", navigate);
  window.addEventListener("online", () => state.live && Object.values(state.live).forEach((c) => c.reconnect()));
  // Ages ("5m") are relative to now: refresh the page's own text twice a
  // minute. This is a redraw from memory, not a request to the server.
  setInterval(onChange, 30000);
  if (api.token()) enter(); else showLogin("");
}

init();
