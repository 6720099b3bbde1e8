// lists.js — the list pages: pods grouped by owner with the workloads,
// and one page per kind. Each has a filter (a name or a label selector),
// a namespace picker that the browser remembers, and sortable columns.
import * as api from "./api.js";
import { h, age, badge, phaseBadge, chips } from "./dom.js";
import { confirmDialog, scaleDialog } from "./actions.js";

// RES maps a resource to its API base, and whether it is namespaced.
export const RES = {
  pods: ["/api/v1", 1], configmaps: ["/api/v1", 1], secrets: ["/api/v1", 1], services: ["/api/v1", 1],
  events: ["/api/v1", 1], persistentvolumeclaims: ["/api/v1", 1], namespaces: ["/api/v1", 0], nodes: ["/api/v1", 0],
  deployments: ["/apis/apps/v1", 1], daemonsets: ["/apis/apps/v1", 1], statefulsets: ["/apis/apps/v1", 1],
  replicasets: ["/apis/apps/v1", 1], jobs: ["/apis/batch/v1", 1], cronjobs: ["/apis/batch/v1", 1],
};

// resPath is the API path of a resource's collection (in ns, or across
// all namespaces when ns is ""), or of one object when name is given.
export function resPath(res, ns, name) {
  const [base, namespaced] = RES[res];
  return base + (namespaced && ns ? "/namespaces/" + api.enc(ns) : "") + "/" + res + (name ? "/" + api.enc(name) : "");
}

const NS_KEY = "skiff.ns";
// ui is what the lists remember across renders; the namespace across visits.
const ui = { ns: localStorage.getItem(NS_KEY) || "", q: "", sort: {}, all: {}, type: "", reason: "" };
// LIMIT is how many rows a table shows until asked for all: a redraw of
// thousands of rows on every change would make the page sluggish.
const LIMIT = 300;

// matcher turns a filter into a test of objects: a label selector
// (comma-separated k=v, k==v, k!=v, k, !k, all of which must hold) when it
// has an = or a !, a name substring otherwise.
export function matcher(q) {
  if (!/[=!]/.test(q)) { const w = q.trim().toLowerCase(); return (o) => o.metadata.name.toLowerCase().includes(w); }
  const terms = q.split(",").map((t) => t.trim()).filter(Boolean).map((t) => {
    const m = /^([^=!]+?)\s*(!=|==|=)\s*(.*)$/.exec(t);
    if (m) return (l) => (m[2] === "!=") !== (l[m[1]] === m[3]);
    return t[0] === "!" ? (l) => !(t.slice(1) in l) : (l) => t in l;
  });
  return (o) => terms.every((f) => f(o.metadata.labels || {}));
}

let rerender = () => {};
const collate = new Intl.Collator(undefined, { numeric: true }).compare; // one collator: localeCompare with options makes one per call
const cmp = (a, b) => (typeof a === "number" && typeof b === "number" ? a - b : collate(String(a), String(b)));

// sorted is a table whose column headers sort it. cols are [label, key]
// (key(o) the sort value, or null for a column that does not sort); row(o)
// gives the cells. groupOf(o), when given, names the heading each row
// goes under.
function sorted(id, caption, cols, objs, row, empty, groupOf) {
  if (!objs.length) return h("p", { class: "empty" }, empty);
  const s = ui.sort[id] || { c: 0, d: false };
  const key = (cols[s.c] || [])[1];
  if (key) objs = objs.slice().sort((a, b) => cmp(key(a), key(b)) * (s.d ? -1 : 1));
  const all = objs.length, cut = all > LIMIT && !ui.all[id];
  if (cut) objs = objs.slice(0, LIMIT);
  const tr = (o) => h("tr", null, row(o).map((c, i) => h("td", { "data-label": cols[i][0] }, c)));
  let body;
  if (groupOf) {
    const g = new Map();
    for (const o of objs) { const k = groupOf(o); if (!g.has(k)) g.set(k, []); g.get(k).push(o); }
    body = [...g].sort((a, b) => cmp(a[0], b[0])).map(([k, os]) => h("tbody", null,
      h("tr", { class: "group" }, h("th", { colspan: cols.length, scope: "colgroup" }, `${k} (${os.length})`)), os.map(tr)));
  } else body = h("tbody", null, objs.map(tr));
  return [h("div", { class: "table-wrap", tabindex: 0, role: "region", "aria-label": caption },
    h("table", { id }, h("caption", { class: "sr-only" }, caption),
      h("thead", null, h("tr", null, cols.map(([label, k], i) => h("th", { scope: "col", "aria-sort": k && i === s.c ? (s.d ? "descending" : "ascending") : null },
        k ? h("button", { type: "button", class: "sort", onclick: () => { const o = ui.sort[id] || s; ui.sort[id] = { c: i, d: i === o.c && !o.d }; rerender(); } }, label) : label)))),
      body)),
  cut ? h("p", null, `The first ${LIMIT} of ${all}: filter to narrow them, or `, h("button", { type: "button", class: "small", onclick: () => { ui.all[id] = true; rerender(); } }, `show all ${all}`)) : null];
}

// toolbar is the namespace picker (unless the token sees one namespace)
// and the filter box.
function toolbar(live, perms, extra) {
  const nss = live.namespaces.list().map((n) => n.metadata.name);
  // Until the namespaces are listed, the remembered choice is an option
  // of its own: the picker shows what the lists are filtered by (scope
  // drops a choice that the listed namespaces lack).
  if (ui.ns && !nss.includes(ui.ns)) nss.push(ui.ns);
  nss.sort();
  const sel = perms.ns ? null : h("select", { id: "ns-filter", onchange: (e) => { ui.ns = e.target.value; localStorage.setItem(NS_KEY, ui.ns); rerender(); } },
    h("option", { value: "" }, "All namespaces"), nss.map((n) => h("option", { value: n }, n)));
  if (sel) sel.value = ui.ns;
  return h("div", { class: "toolbar" },
    sel ? h("label", { class: "check" }, "Namespace", sel) : null,
    h("label", { class: "check" }, "Filter", h("input", { id: "filter", type: "search", value: ui.q, placeholder: "name or app=web,tier!=db", spellcheck: "false", autocomplete: "off",
      oninput: (e) => { ui.q = e.target.value; rerender(); } })), extra);
}

// scope forgets a remembered namespace that is gone, or that a token
// confined to one namespace cannot pick (the browser may have kept an
// admin's choice).
function scope(live, perms) {
  if (ui.ns && (perms.ns || (live.namespaces.loaded && !live.namespaces.items.has("/" + ui.ns)))) ui.ns = "";
}

// pick filters objects by the chosen namespace and the filter box.
function pick(objs) {
  const m = matcher(ui.q);
  return objs.filter((o) => (!ui.ns || !o.metadata.namespace || o.metadata.namespace === ui.ns) && m(o));
}

const link = (res, o, text) => h("a", { href: `#/${res}/${api.enc(o.metadata.namespace || "-")}/${api.enc(o.metadata.name)}`, class: "name" }, text || o.metadata.name);
const editLink = (res, o) => h("a", { href: `#/edit/${res}/${api.enc(o.metadata.namespace || "-")}/${api.enc(o.metadata.name)}`, "aria-label": `Edit ${o.metadata.name} as YAML` }, "Edit");
const N = ["Name", (o) => o.metadata.name], NS = ["Namespace", (o) => o.metadata.namespace], AGE = ["Age", (o) => o.metadata.creationTimestamp || ""];
const n = (x) => String(x || 0);

function podReady(p) {
  const cs = p.status?.containerStatuses || [];
  return [cs.filter((c) => c.ready).length, (p.spec.containers || []).length];
}
const restarts = (p) => (p.status?.containerStatuses || []).reduce((k, c) => k + (c.restartCount || 0), 0);

// owner is a pod's controller, a ReplicaSet's Deployment in its place when
// that Deployment is known: [kind, name, resource].
function owner(p, deps) {
  const o = (p.metadata.ownerReferences || []).find((r) => r.controller) || (p.metadata.ownerReferences || [])[0];
  if (!o) return null;
  const d = o.kind === "ReplicaSet" && /^(.+)-[a-z0-9]+$/.exec(o.name);
  if (d && deps.has(p.metadata.namespace + "/" + d[1])) return ["Deployment", d[1], "deployments"];
  return [o.kind, o.name, o.kind.toLowerCase() + "s"];
}

function del(kind, res, o, notify) {
  const id = `${o.metadata.namespace}/${o.metadata.name}`;
  return h("button", { type: "button", class: "danger small", "aria-label": `Delete ${kind} ${id}`,
    onclick: () => confirmDialog(`Delete ${kind} ${id}?`, "Its pods are deleted with it.",
      () => api.request("DELETE", resPath(res, o.metadata.namespace, o.metadata.name)).then(() => notify(`${kind} ${id} deleted.`))) }, "Delete");
}

const TABS = [["workloads", "Pods, Deployments, DaemonSets"], ["statefulsets", "StatefulSets"], ["jobs", "Jobs"], ["cronjobs", "CronJobs"],
  ["configmaps", "ConfigMaps"], ["secrets", "Secrets"]];
function tabs(cur, from, to) {
  return h("nav", { class: "tabs", "aria-label": "Kinds" }, TABS.slice(from, to).map(([r, l]) => h("a", { href: "#/" + r, "aria-current": r === cur ? "page" : null }, l)));
}

export const workloads = {
  enter: () => fresh(),
  render({ live, perms, notify, rerender: r }) {
    rerender = r;
    scope(live, perms);
    const deps = live.deployments;
    const pods = pick(live.pods.list()), ds = pick(deps.list()), dss = pick(live.daemonsets.list());
    const groupOf = (p) => { const o = owner(p, deps.items); return o ? `${o[0]} ${p.metadata.namespace}/${o[1]}` : "No owner"; };
    return h("section", null,
      h("h1", { tabindex: -1 }, "Workloads"), tabs("workloads", 0, 4), toolbar(live, perms),
      h("h2", null, `Pods (${pods.length})`),
      sorted("pods", "Pods, grouped by owner", [N, NS, ["Ready", (p) => podReady(p)[0]], ["Status", (p) => p.status?.phase || ""],
        ["Restarts", restarts], ["Owner", (p) => (owner(p, deps.items) || [""])[1]], ["Node", (p) => p.spec.nodeName || ""], AGE, ["IP", null]], pods, (p) => {
        const [rd, all] = podReady(p), o = owner(p, deps.items);
        const w = !p.metadata.deletionTimestamp && (p.status?.containerStatuses || []).map((c) => c.state?.waiting?.reason).find((r) => r && r !== "ContainerCreating");
        return [link("pods", p), p.metadata.namespace, badge(`${rd}/${all}`, rd === all ? "ok" : "warn"), w ? badge(w, "bad") : phaseBadge(p.status?.phase, p.metadata.deletionTimestamp),
          n(restarts(p)), o ? h("a", { href: `#/${o[2]}/${api.enc(p.metadata.namespace)}/${api.enc(o[1])}` }, `${o[0]} ${o[1]}`) : "—",
          p.spec.nodeName ? h("a", { href: "#/nodes/" + api.enc(p.spec.nodeName) }, p.spec.nodeName) : badge("unscheduled", "warn"),
          age(p.metadata.creationTimestamp), p.status?.podIP || "—"];
      }, live.pods.loaded ? "No pods match." : "Loading…", groupOf),
      h("h2", null, `Deployments (${ds.length})`),
      sorted("deployments", "Deployments", [N, NS, ["Ready", (d) => d.status?.readyReplicas || 0], ["Up to date", (d) => d.status?.updatedReplicas || 0], AGE, ["", null]], ds, (d) => {
        const want = d.spec.replicas ?? 1, st = d.status || {}, id = `${d.metadata.namespace}/${d.metadata.name}`;
        return [link("deployments", d), d.metadata.namespace, badge(`${st.readyReplicas || 0}/${want}`, (st.readyReplicas || 0) >= want ? "ok" : "warn"),
          n(st.updatedReplicas), age(d.metadata.creationTimestamp),
          h("span", { class: "row-actions" },
            perms.scaleDeployments ? h("button", { type: "button", class: "small", "aria-label": `Scale ${id}`, onclick: () => scaleDialog(d, resPath("deployments", d.metadata.namespace, d.metadata.name), notify) }, "Scale") : null,
            perms.deleteDeployments ? del("deployment", "deployments", d, notify) : null)];
      }, deps.loaded ? "No Deployments match." : "Loading…"),
      h("h2", null, `DaemonSets (${dss.length})`),
      sorted("daemonsets", "DaemonSets", [N, NS, ["Ready", (d) => d.status?.numberReady || 0], ["Desired", (d) => d.status?.desiredNumberScheduled || 0], AGE, ["", null]], dss, (d) => {
        const st = d.status || {};
        return [link("daemonsets", d), d.metadata.namespace, badge(`${st.numberReady || 0}/${st.desiredNumberScheduled || 0}`, (st.numberReady || 0) >= (st.desiredNumberScheduled || 0) ? "ok" : "warn"),
          n(st.desiredNumberScheduled), age(d.metadata.creationTimestamp), perms.deleteDaemonSets ? del("daemonset", "daemonsets", d, notify) : ""];
      }, live.daemonsets.loaded ? "No DaemonSets match." : "Loading…"));
  },
};

// Secret values stay on the server until a key's Show is pressed: the
// list keeps only the key names, and a click fetches the Secret and shows
// that one value.
const shown = new Map(); // "ns/name/key" → decoded value
function secretKey(o, k) {
  const id = `${o.metadata.namespace}/${o.metadata.name}/${k}`;
  if (shown.has(id)) return h("span", { class: "secret" }, h("code", null, k), " ", h("code", { class: "value" }, shown.get(id)));
  return h("button", { type: "button", class: "small", "aria-label": `Show ${k} of ${o.metadata.name}`, onclick: async () => {
    try {
      const s = await api.get(resPath("secrets", o.metadata.namespace, o.metadata.name));
      const b = atob((s.data || {})[k] || "");
      shown.set(id, new TextDecoder().decode(Uint8Array.from(b, (c) => c.charCodeAt(0))));
    } catch (err) { shown.set(id, "(cannot read: " + err.message + ")"); }
    rerender();
  } }, "Show ", k);
}

const keys = (o) => Object.keys(o.data || {}).concat(Object.keys(o.binaryData || {}));
const cond = (o, t) => ((o.status?.conditions || []).find((c) => c.type === t) || {}).status === "True";

// KINDS describes the list page of each kind: title, columns, cells.
const KINDS = {
  configmaps: ["ConfigMaps", [["Keys", (o) => keys(o).length]], (o) => [keys(o).join(", ") || "—"]],
  secrets: ["Secrets", [["Type", (o) => o.type || ""], ["Values", null]], (o) => [o.type || "Opaque", h("span", { class: "chips" }, o.keys.map((k) => secretKey(o, k)))],
    (o) => ({ ...o, data: undefined, stringData: undefined, keys: Object.keys(o.data || {}) })],
  services: ["Services", [["Type", (o) => o.spec.type || ""], ["Cluster IP", (o) => o.spec.clusterIP || ""], ["Ports", null]],
    (o) => [o.spec.type || "ClusterIP", o.spec.clusterIP || "—", (o.spec.ports || []).map((p) => `${p.port}${p.nodePort ? ":" + p.nodePort : ""}/${p.protocol || "TCP"}`).join(", ") || "—"]],
  statefulsets: ["StatefulSets", [["Ready", (o) => o.status?.readyReplicas || 0]], (o) => [badge(`${o.status?.readyReplicas || 0}/${o.spec.replicas ?? 1}`, (o.status?.readyReplicas || 0) >= (o.spec.replicas ?? 1) ? "ok" : "warn")]],
  jobs: ["Jobs", [["Completions", (o) => o.status?.succeeded || 0], ["Status", null]],
    (o) => [`${o.status?.succeeded || 0}/${o.spec.completions ?? 1}`, cond(o, "Failed") ? badge("Failed", "bad") : cond(o, "Complete") ? badge("Complete", "ok") : badge(o.status?.active ? "Running" : "Pending", "warn")]],
  cronjobs: ["CronJobs", [["Schedule", (o) => o.spec.schedule], ["Suspended", null], ["Active", (o) => (o.status?.active || []).length], ["Last run", (o) => o.status?.lastScheduleTime || ""]],
    (o) => [h("code", null, o.spec.schedule), o.spec.suspend ? badge("Suspended", "warn") : "no", n((o.status?.active || []).length), age(o.status?.lastScheduleTime)]],
  persistentvolumeclaims: ["PersistentVolumeClaims", [["Status", (o) => o.status?.phase || ""], ["Volume", (o) => o.spec.volumeName || ""], ["Capacity", null], ["Class", (o) => o.spec.storageClassName || ""]],
    (o) => [badge(o.status?.phase || "Pending", o.status?.phase === "Bound" ? "ok" : "warn"), o.spec.volumeName || "—", (o.status?.capacity || {}).storage || "—", o.spec.storageClassName || "—"]],
  namespaces: ["Namespaces", [["Status", (o) => o.status?.phase || ""], ["Labels", null]], (o) => [badge(o.status?.phase || "Active", o.status?.phase === "Terminating" ? "warn" : "ok"), chips(o.metadata.labels)]],
};

// view is one page's own collection, watched while the page is shown.
const view = { coll: null };

// fresh clears the filters when a list page opens (the namespace stays).
function fresh() { ui.q = ui.type = ui.reason = ""; ui.all = {}; }

function watchFor(res, perms, fieldSelector = "", keep) {
  fresh();
  const scope = perms.ns && RES[res][1] ? perms.ns : "";
  view.coll = res === "namespaces" ? null : new api.Collection(resPath(res, scope), fieldSelector, keep);
  if (view.coll) view.coll.subscribe(() => rerender());
}

function stop() {
  if (view.coll) view.coll.stop();
  view.coll = null;
  shown.clear();
}

function problem(c, title) {
  if (!c.error) return null;
  return h("p", { class: "error", role: "alert" }, c.error.code === 404 ? `This server does not serve ${title}.` : c.error.code === 403 ? `This token may not list ${title}.` : c.error.message);
}

// kindList is the list page of res.
export function kindList(res) {
  const [title, cols, cells, keep] = KINDS[res];
  const namespaced = RES[res][1];
  const tabbed = TABS.findIndex(([r]) => r === res);
  return {
    enter({ perms, rerender: r }) { rerender = r; watchFor(res, perms, "", keep); },
    leave: stop,
    render({ live, perms, rerender: r }) {
      rerender = r;
      scope(live, perms);
      const c = view.coll || live.namespaces;
      const objs = pick(c.list());
      return h("section", null, h("h1", { tabindex: -1 }, title),
        tabbed < 0 ? null : tabbed < 4 ? tabs(res, 0, 4) : tabs(res, 4, 6),
        toolbar(live, perms), problem(c, title),
        sorted(res, title, [N, namespaced ? NS : null, ...cols, AGE, ["", null]].filter(Boolean), objs,
          (o) => [namespaced ? link(res, o) : h("span", { class: "name" }, o.metadata.name), namespaced ? o.metadata.namespace : null, ...cells(o), age(o.metadata.creationTimestamp), editLink(res, o)].filter((x) => x !== null),
          c.loaded ? `No ${title} match.` : "Loading…"));
    },
  };
}

// events is the events page, with type and reason filters.
export const events = {
  enter({ perms, rerender: r }) { rerender = r; watchFor("events", perms); },
  leave: stop,
  render({ live, perms, rerender: r }) {
    rerender = r;
    scope(live, perms);
    const all = view.coll.list();
    const reasons = [...new Set(all.map((e) => e.reason || ""))].filter(Boolean).sort();
    const m = matcher(ui.q);
    const objs = all.filter((e) => (!ui.ns || e.metadata.namespace === ui.ns) && (!ui.type || (e.type || "Normal") === ui.type) && (!ui.reason || e.reason === ui.reason) &&
      m({ metadata: { name: ((e.involvedObject || {}).name || "") + " " + (e.message || "") } }));
    const select = (id, label, key, opts) => {
      const s = h("select", { id, onchange: (ev) => { ui[key] = ev.target.value; rerender(); } }, h("option", { value: "" }, "Any"), opts.map((o) => h("option", { value: o }, o)));
      s.value = ui[key];
      return h("label", { class: "check" }, label, s);
    };
    const last = (e) => e.lastTimestamp || e.eventTime || e.metadata.creationTimestamp || "";
    if (!ui.sort.events) ui.sort.events = { c: 5, d: true };
    return h("section", null, h("h1", { tabindex: -1 }, "Events"),
      toolbar(live, perms, [select("event-type", "Type", "type", ["Normal", "Warning"]), select("event-reason", "Reason", "reason", reasons)]),
      problem(view.coll, "events"),
      sorted("events", "Events", [["Type", (e) => e.type || ""], ["Reason", (e) => e.reason || ""], ["Object", (e) => (e.involvedObject || {}).name || ""], ["Message", null], ["Count", (e) => e.count || 1], ["Last seen", last], ["", null]], objs, (e) => {
        const io = e.involvedObject || {};
        return [badge(e.type || "Normal", e.type === "Warning" ? "warn" : "muted"), e.reason || "", `${io.kind || ""} ${io.namespace ? io.namespace + "/" : ""}${io.name || ""}`, e.message || "", n(e.count || 1), age(last(e)), editLink("events", e)];
      }, view.coll.loaded ? "No events match." : "Loading…"));
  },
};

// routes and nav are the list pages, for app.js.
const NAV_OF = { statefulsets: "/workloads", jobs: "/workloads", cronjobs: "/workloads", secrets: "/configmaps" };
export const routes = [{ re: /^\/workloads$/, view: workloads, nav: "/workloads" }, { re: /^\/events$/, view: events, nav: "/events" },
  ...Object.keys(KINDS).map((r) => ({ re: new RegExp(`^/${r}$`), view: kindList(r), nav: NAV_OF[r] || "/" + r }))];
export const nav = [["/services", "Services"], ["/configmaps", "Config"], ["/persistentvolumeclaims", "Storage"], ["/namespaces", "Namespaces"], ["/events", "Events"]];
