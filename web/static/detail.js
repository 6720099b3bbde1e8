// detail.js — the page of one Deployment, DaemonSet, StatefulSet,
// ReplicaSet, Job, CronJob, Service or PersistentVolumeClaim
// (#/<resource>/<namespace>/<name>): its status and conditions, its pods,
// its events, its YAML and what may be done to it. Each page first asks
// discovery whether the server serves the kind, then watches the object
// (one watch, field selector on its name), its events (one watch, field
// selector on involvedObject) and, for some kinds, one related list.
import * as api from "./api.js";
import { h, age, badge, table, dl, chips, phaseBadge } from "./dom.js";
import { buttons, rollback } from "./rollout.js";
import { confirmDialog } from "./actions.js";

// KINDS: resource → kind, group/version, actions, and the related list
// it watches (in the namespace; "name" watches the object of the same name).
const KINDS = {
  deployments: ["Deployment", "apps/v1", ["scale", "restart", "pause"], "apps/v1/replicasets"],
  daemonsets: ["DaemonSet", "apps/v1", ["restart"]],
  statefulsets: ["StatefulSet", "apps/v1", ["scale", "restart"]],
  replicasets: ["ReplicaSet", "apps/v1", ["scale"]],
  jobs: ["Job", "batch/v1", ["suspend"]],
  cronjobs: ["CronJob", "batch/v1", ["trigger", "suspend"], "batch/v1/jobs"],
  services: ["Service", "v1", [], "v1/endpoints", true],
  persistentvolumeclaims: ["PersistentVolumeClaim", "v1", []],
};
const RES = Object.fromEntries(Object.entries(KINDS).map(([r, k]) => [k[0], r]));

const base = (gv) => (gv === "v1" ? "/api/v1" : "/apis/" + gv);
const nsPath = (gvr, ns) => { const i = gvr.lastIndexOf("/"); return `${base(gvr.slice(0, i))}/namespaces/${api.enc(ns)}/${gvr.slice(i + 1)}`; };

// href is the page of an object of kind (a Kind or a resource), or "" when
// it has none.
export function href(kind, ns, name) {
  const r = KINDS[kind] ? kind : RES[kind];
  return r ? `#/${r}/${api.enc(ns)}/${api.enc(name)}` : "";
}

// served answers, once per group/version, which resources the server
// serves (discovery); a group it does not serve at all serves none.
const discovery = new Map();
function served(gv) {
  if (!discovery.has(gv)) {
    discovery.set(gv, api.get(base(gv)).then((l) => new Set((l.resources || []).map((r) => r.name)),
      (e) => { if (e.code === 404) return new Set(); discovery.delete(gv); throw e; }));
  }
  return discovery.get(gv);
}

// The page's state lives for one visit.
let v = null;

function stop() {
  if (!v) return;
  for (const c of [v.obj, v.events, v.rel]) if (c) c.stop();
  v = null;
}

async function may(perms, verb, res, group, ns, sub = "") {
  return perms.admin || api.can(verb, res, { group, namespace: ns, subresource: sub });
}

async function start(state, { perms, rerender }, res, ns, name) {
  const [kind, gv, , rel, byName] = KINDS[res];
  const group = gv.includes("/") ? gv.split("/")[0] : "";
  try {
    const set = await served(gv);
    if (v !== state) return;
    state.served = set.has(res);
    if (!state.served) { rerender(); return; }
    const relGroup = rel && rel.includes("/") && rel.split("/").length === 3 ? rel.split("/")[0] : "";
    const [watch, watchRel, patch, scale, del, create] = await Promise.all([
      may(perms, "watch", res, group, ns),
      rel ? may(perms, "watch", rel.slice(rel.lastIndexOf("/") + 1), relGroup, ns) : false,
      may(perms, "patch", res, group, ns),
      may(perms, "patch", res, group, ns, "scale"),
      may(perms, "delete", res, group, ns),
      res === "cronjobs" ? may(perms, "create", "jobs", "batch", ns) : false,
    ]);
    if (v !== state) return;
    state.may = { patch, scale, delete: del, create };
    const coll = (ok, path, sel) => { const c = ok ? new api.Collection(path, sel) : new api.StaticCollection(); c.subscribe(rerender); return c; };
    state.obj = coll(watch, nsPath(`${gv}/${res}`, ns), "metadata.name=" + name);
    state.events = coll(perms.readEvents, nsPath("v1/events", ns), `involvedObject.kind=${kind},involvedObject.name=${name}`);
    if (rel) state.rel = coll(watchRel, nsPath(rel, ns), byName ? "metadata.name=" + name : "");
    state.denied = !watch;
  } catch (e) {
    if (v === state) state.error = e.message;
  }
  rerender();
}

// matches says whether labels satisfy a LabelSelector (matchLabels and
// matchExpressions) or a Service's plain map; an empty one matches nothing.
function matches(sel, labels = {}) {
  if (!sel) return false;
  const ml = sel.matchLabels || (sel.matchExpressions ? {} : sel);
  const ex = sel.matchExpressions || [];
  if (!Object.keys(ml).length && !ex.length) return false;
  return Object.entries(ml).every(([k, x]) => labels[k] === x) && ex.every((e) => {
    const has = k => Object.hasOwn(labels, k);
    switch (e.operator) {
      case "In": return has(e.key) && e.values.includes(labels[e.key]);
      case "NotIn": return !has(e.key) || !e.values.includes(labels[e.key]);
      case "Exists": return has(e.key);
      default: return !has(e.key);
    }
  });
}

const owned = (o, uids) => (o.metadata.ownerReferences || []).some((r) => uids.has(r.uid));
const byAge = (a, b) => (b.metadata.creationTimestamp || "").localeCompare(a.metadata.creationTimestamp || "");
const n = (x) => String(x || 0);

// podsOf picks the object's pods from the live pod list.
function podsOf(res, o, pods, rel) {
  const ns = pods.filter((p) => p.metadata.namespace === o.metadata.namespace);
  if (res === "services") return ns.filter((p) => matches(o.spec.selector, p.metadata.labels));
  if (res === "persistentvolumeclaims") return ns.filter((p) => (p.spec.volumes || []).some((x) => x.persistentVolumeClaim && x.persistentVolumeClaim.claimName === o.metadata.name));
  if (res === "cronjobs") return ns.filter((p) => owned(p, new Set(rel.map((j) => j.metadata.uid))));
  if (res === "jobs") return ns.filter((p) => owned(p, new Set([o.metadata.uid])) || matches(o.spec.selector, p.metadata.labels));
  return ns.filter((p) => matches(o.spec.selector, p.metadata.labels));
}

function podRow(p) {
  const cs = (p.status && p.status.containerStatuses) || [];
  const ready = cs.filter((c) => c.ready).length, total = (p.spec.containers || []).length;
  return [h("a", { href: `#/pods/${api.enc(p.metadata.namespace)}/${api.enc(p.metadata.name)}` }, p.metadata.name),
    badge(`${ready}/${total}`, ready === total ? "ok" : "warn"),
    phaseBadge(p.status && p.status.phase, p.metadata.deletionTimestamp),
    n(cs.reduce((s, c) => s + (c.restartCount || 0), 0)),
    p.spec.nodeName ? h("a", { href: "#/nodes/" + api.enc(p.spec.nodeName) }, p.spec.nodeName) : "—",
    age(p.metadata.creationTimestamp)];
}

const images = (t) => ((t && t.spec && t.spec.containers) || []).map((c) => c.image).join(", ");
const when = (ts) => (ts ? age(ts) + " ago" : "");
const ratio = (a, b) => badge(`${a || 0}/${b || 0}`, (a || 0) >= (b || 0) ? "ok" : "warn");
const link = (kind, ns, name) => { const u = href(kind, ns, name); return u ? h("a", { href: u }, `${kind}/${name}`) : `${kind}/${name}`; };

// facts are the kind's status at a glance.
function facts(res, o) {
  const s = o.spec || {}, st = o.status || {}, ns = o.metadata.namespace;
  switch (res) {
    case "deployments": return [["Ready", ratio(st.readyReplicas, s.replicas ?? 1)], ["Up to date", n(st.updatedReplicas)], ["Available", n(st.availableReplicas)],
      ["Strategy", (s.strategy && s.strategy.type) || "RollingUpdate"], ["Rollout", s.paused ? badge("Paused", "warn") : "active"], ["Images", images(s.template)]];
    case "daemonsets": return [["Ready", ratio(st.numberReady, st.desiredNumberScheduled)], ["Scheduled", n(st.currentNumberScheduled)], ["Up to date", n(st.updatedNumberScheduled)],
      ["Available", n(st.numberAvailable)], ["Images", images(s.template)]];
    case "statefulsets": return [["Ready", ratio(st.readyReplicas, s.replicas ?? 1)], ["Current", n(st.currentReplicas)], ["Updated", n(st.updatedReplicas)],
      ["Service", s.serviceName || ""], ["Revision", st.updateRevision || ""], ["Images", images(s.template)]];
    case "replicasets": return [["Ready", ratio(st.readyReplicas, s.replicas ?? 1)], ["Revision", (o.metadata.annotations || {})["deployment.kubernetes.io/revision"] || ""], ["Images", images(s.template)]];
    case "jobs": return [["Completions", ratio(st.succeeded, s.completions ?? 1)], ["Active", n(st.active)], ["Failed", n(st.failed)],
      ["Suspended", s.suspend ? badge("Suspended", "warn") : "no"], ["Started", when(st.startTime)], ["Completed", when(st.completionTime)], ["Images", images(s.template)]];
    case "cronjobs": return [["Schedule", h("code", null, s.schedule)], ["Time zone", s.timeZone || ""], ["Suspended", s.suspend ? badge("Suspended", "warn") : "no"],
      ["Concurrency", s.concurrencyPolicy || "Allow"], ["Active", n((st.active || []).length)], ["Last run", when(st.lastScheduleTime)], ["Last success", when(st.lastSuccessfulTime)]];
    case "services": return [["Type", s.type || "ClusterIP"], ["Cluster IP", (s.clusterIPs || [s.clusterIP]).filter(Boolean).join(", ")],
      ["Ports", (s.ports || []).map((p) => `${p.name ? p.name + " " : ""}${p.port}/${p.protocol || "TCP"}→${p.targetPort ?? p.port}${p.nodePort ? " (node " + p.nodePort + ")" : ""}`).join(", ")],
      ["Selector", chips(s.selector)], ["External", ((st.loadBalancer && st.loadBalancer.ingress) || []).map((i) => i.ip || i.hostname).concat(s.externalIPs || []).join(", ")]];
    case "persistentvolumeclaims": return [["Phase", badge(st.phase || "Pending", st.phase === "Bound" ? "ok" : "warn")], ["Volume", s.volumeName || ""],
      ["Capacity", ((st.capacity || {}).storage) || ""], ["Requested", ((s.resources && s.resources.requests) || {}).storage || ""],
      ["Access modes", (s.accessModes || []).join(", ")], ["Storage class", s.storageClassName || ""]];
  }
  return [["Namespace", ns]];
}

// history is a Deployment's ReplicaSets by revision, each with a button
// to roll back to it.
function history(d, rss, path, may, notify) {
  const rev = (rs) => Number((rs.metadata.annotations || {})["deployment.kubernetes.io/revision"] || 0);
  const mine = rss.filter((rs) => owned(rs, new Set([d.metadata.uid])) && rev(rs)).sort((a, b) => rev(b) - rev(a));
  const cur = rev(mine[0] || { metadata: {} });
  return table("Rollout history", ["Revision", "ReplicaSet", "Images", "Pods", "Change cause", "Age", ""], mine.map((rs) => [
    String(rev(rs)) + (rev(rs) === cur ? " (current)" : ""),
    h("a", { href: href("replicasets", rs.metadata.namespace, rs.metadata.name) }, rs.metadata.name),
    images(rs.spec.template), ratio((rs.status || {}).readyReplicas, rs.spec.replicas),
    (rs.metadata.annotations || {})["kubernetes.io/change-cause"] || "", age(rs.metadata.creationTimestamp),
    rev(rs) !== cur && may.patch ? h("button", {
      type: "button", class: "small", id: "rollback-" + rev(rs), disabled: !!d.spec.paused, title: d.spec.paused ? "Resume the rollout first" : null,
      onclick: () => confirmDialog(`Roll ${d.metadata.name} back to revision ${rev(rs)}?`, `Its pods will run ${images(rs.spec.template)} again.`,
        () => rollback(d, path, rs).then(() => notify(`${d.metadata.name} rolled back to revision ${rev(rs)}.`)), "Roll back"),
    }, "Roll back") : "",
  ]), "No revisions yet.");
}

function endpointsTable(ep) {
  const rows = [];
  for (const s of (ep && ep.subsets) || []) {
    const ports = (s.ports || []).map((p) => `${p.port}/${p.protocol || "TCP"}`).join(", ");
    for (const [list, ok] of [[s.addresses, true], [s.notReadyAddresses, false]]) {
      for (const a of list || []) {
        const t = a.targetRef;
        rows.push([a.ip, ports, badge(ok ? "ready" : "not ready", ok ? "ok" : "warn"),
          t && t.kind === "Pod" ? h("a", { href: `#/pods/${api.enc(t.namespace || ep.metadata.namespace)}/${api.enc(t.name)}` }, t.name) : "—", a.nodeName || "—"]);
      }
    }
  }
  return table("Endpoints", ["Address", "Ports", "State", "Pod", "Node"], rows, "No endpoints: no ready pod matches the selector.");
}

// yaml writes a decoded object as YAML (for reading; JSON strings where
// plain ones would be ambiguous).
function yaml(x, ind = "") {
  const obj = (y) => y && typeof y === "object";
  if (Array.isArray(x)) {
    return x.length ? x.map((y) => "\n" + ind + "-" + (obj(y) && Object.keys(y).length ? " " + yaml(y, ind + "  ").replace(/^\n\s*/, "") : yaml(y, ind + "  "))).join("") : " []";
  }
  if (obj(x)) {
    const e = Object.entries(x);
    return e.length ? e.map(([k, y]) => "\n" + ind + plain(k) + ":" + yaml(y, ind + "  ")).join("") : " {}";
  }
  return " " + plain(x);
}
function plain(x) {
  if (typeof x !== "string") return String(x);
  return /^[A-Za-z_/][\w./@:-]*(?: [\w./@():-]+)*$/.test(x) && !/:( |$)|^(true|false|null|yes|no|on|off|y|n)$/i.test(x) ? x : JSON.stringify(x);
}

function conditionsTable(st) {
  const cs = (st && st.conditions) || [];
  return table("Conditions", ["Type", "Status", "Reason", "Message", "Changed"], cs.map((c) => [c.type,
    badge(c.status, c.status === "True" ? (/Fail|Pressure/.test(c.type) ? "bad" : "ok") : "muted"), c.reason || "", c.message || "", when(c.lastTransitionTime)]), "No conditions.");
}

export const view = {
  enter(ctx, res, ns, name) {
    stop();
    v = { res, ns, name, served: undefined, may: {} };
    if (KINDS[res]) start(v, ctx, res, ns, name);
  },
  leave: stop,
  render({ live, notify }, res, ns, name) {
    const k = KINDS[res];
    const crumbs = h("p", { class: "crumbs" }, h("a", { href: "#/workloads" }, "Workloads"), ` / ${k ? k[0] : res} / ${ns} /`);
    const page = (...body) => h("section", null, crumbs, h("h1", { tabindex: -1 }, name), ...body);
    if (!k) return page(h("p", null, `The dashboard has no page for ${res}.`));
    if (v.error) return page(h("p", { class: "error", role: "alert" }, "Cannot ask the server what it serves: " + v.error));
    if (v.served === false) return page(h("p", { id: "not-served" }, `This server does not serve ${k[0]}s (${k[1]} ${res} is not in its API discovery).`));
    if (v.denied) return page(h("p", null, `This token may not read ${k[0]}s in ${ns}.`));
    const o = v.obj && v.obj.items.get(ns + "/" + name);
    if (!o) return page(h("p", null, v.obj && v.obj.loaded ? `This ${k[0]} does not exist (any more).` : "Loading…"));
    const path = nsPath(`${k[1]}/${res}`, ns) + "/" + api.enc(name);
    const rel = v.rel ? v.rel.list() : [];
    const pods = podsOf(res, o, live.pods.list(), res === "cronjobs" ? rel.filter((j) => owned(j, new Set([o.metadata.uid]))) : rel).sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
    const events = v.events.list().sort((a, b) => (b.lastTimestamp || "").localeCompare(a.lastTimestamp || ""));
    const shown = { ...o, metadata: { ...o.metadata } };
    delete shown.metadata.managedFields;
    return h("section", { class: "detail", "data-kind": k[0] }, crumbs,
      h("h1", { tabindex: -1 }, name, " ", badge(k[0], "muted"), o.metadata.deletionTimestamp ? badge("Terminating", "warn") : null),
      buttons(o, res, k[0], k[2], path, v.may, notify),
      dl([...facts(res, o), ["Labels", chips(o.metadata.labels)], ["Created", when(o.metadata.creationTimestamp)],
        ["Owner", (o.metadata.ownerReferences || []).map((r) => link(r.kind, ns, r.name))[0] || ""]]),
      res !== "services" && res !== "persistentvolumeclaims" ? [h("h2", null, "Conditions"), conditionsTable(o.status)] : null,
      res === "deployments" ? [h("h2", null, "Rollout history"), history(o, rel, path, v.may, notify)] : null,
      res === "cronjobs" ? [h("h2", null, "Jobs"), table("Jobs", ["Name", "Completions", "Active", "Failed", "Age"],
        rel.filter((j) => owned(j, new Set([o.metadata.uid]))).sort(byAge).map((j) => [h("a", { href: href("jobs", ns, j.metadata.name) }, j.metadata.name),
          ratio((j.status || {}).succeeded, j.spec.completions ?? 1), n((j.status || {}).active), n((j.status || {}).failed), age(j.metadata.creationTimestamp)]),
        v.rel.loaded ? "No jobs." : "Loading…")] : null,
      res === "services" ? [h("h2", null, "Endpoints"), endpointsTable(v.rel.items.get(ns + "/" + name))] : null,
      h("h2", null, `Pods (${pods.length})`),
      table("Pods", ["Name", "Ready", "Phase", "Restarts", "Node", "Age"], pods.map(podRow), live.pods.loaded ? "No pods." : "Loading…"),
      h("h2", null, "Events"),
      table("Events", ["Type", "Reason", "Message", "Count", "Last seen"],
        events.map((e) => [badge(e.type || "Normal", e.type === "Warning" ? "warn" : "muted"), e.reason || "", e.message || "", n(e.count || 1), age(e.lastTimestamp || e.eventTime || e.metadata.creationTimestamp)]),
        v.events.loaded ? "No events." : "Loading…"),
      h("h2", null, "YAML ", v.may.patch ? h("a", { href: `#/edit/${res}/${api.enc(ns)}/${api.enc(name)}`, id: "edit-link", class: "small" }, "Edit") : null),
      h("pre", { class: "yaml", id: "yaml-view", tabindex: 0, "aria-label": `${k[0]} ${name} as YAML` }, yaml(shown).slice(1)));
  },
};
