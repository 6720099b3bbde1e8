// detail.js — the page of one Deployment, DaemonSet, StatefulSet,
// ReplicaSet, Job, CronJob, Service or PersistentVolumeClaim
// (#/<resource>/<namespace>/<name>): status, conditions, pods, events,
// YAML and actions. It asks discovery once per group whether the server
// serves the kind, then watches the object and its events (field
// selectors) and, for some kinds, one related list.
import * as api from "./api.js";
import { h, age, badge, table, dl, chips, phaseBadge } from "./dom.js";
import { buttons, rollback } from "./rollout.js";
import { confirmDialog } from "./actions.js";

// resource → [kind, group/version, actions, related list it watches,
// whether that list is watched by the object's name].
const KINDS = {
  deployments: ["Deployment", "apps/v1", "scale restart pause", "apps/v1/replicasets"],
  daemonsets: ["DaemonSet", "apps/v1", "restart"],
  statefulsets: ["StatefulSet", "apps/v1", "scale restart"],
  replicasets: ["ReplicaSet", "apps/v1", "scale"],
  jobs: ["Job", "batch/v1", "suspend"],
  cronjobs: ["CronJob", "batch/v1", "trigger suspend", "batch/v1/jobs"],
  services: ["Service", "v1", "", "v1/endpoints", 1],
  persistentvolumeclaims: ["PersistentVolumeClaim", "v1", ""],
};
const RES = Object.fromEntries(Object.entries(KINDS).map(([r, k]) => [k[0], r]));
const base = (gv) => (gv === "v1" ? "/api/v1" : "/apis/" + gv);
// split turns "apps/v1/replicasets" into [group, "apps/v1", "replicasets"].
const split = (gvr) => { const i = gvr.lastIndexOf("/"), gv = gvr.slice(0, i); return [gv.includes("/") ? gv.split("/")[0] : "", gv, gvr.slice(i + 1)]; };
const nsPath = (gvr, ns) => { const [, gv, r] = split(gvr); return `${base(gv)}/namespaces/${api.enc(ns)}/${r}`; };

// href is the page of an object of kind (a Kind or a resource), or "".
export function href(kind, ns, name) {
  const r = KINDS[kind] ? kind : RES[kind];
  return r ? `#/${r}/${api.enc(ns)}/${api.enc(name)}` : "";
}

// owners are o's owners, linked to their pages when they have one, or "".
export function owners(o) {
  const l = (o.metadata.ownerReferences || []).map((r) => { const u = href(r.kind, o.metadata.namespace, r.name), t = `${r.kind}/${r.name}`; return u ? h("a", { href: u }, t) : t; });
  return l.length ? l : "";
}

const discovery = new Map(); // group/version → Promise<Set of resources>
function served(gv) {
  if (!discovery.has(gv)) {
    discovery.set(gv, api.get(base(gv)).then((l) => new Set((l.resources || []).map((r) => r.name)),
      (e) => { if (e.code === 404) return new Set(); discovery.delete(gv); throw e; }));
  }
  return discovery.get(gv);
}

let v = null; // this visit's state

function stop() {
  if (v) for (const c of [v.obj, v.events, v.rel]) if (c) c.stop();
  v = null;
}

async function start(st, { perms, rerender }, res, ns, name) {
  const [kind, gv, , rel, byName] = KINDS[res];
  const can = (verb, gvr, sub) => { const [group, , r] = split(gvr); return perms.admin || api.can(verb, r, { group, namespace: ns, subresource: sub }); };
  const self = `${gv}/${res}`;
  try {
    st.served = (await served(gv)).has(res);
    if (v !== st || !st.served) return;
    const [watch, watchRel, patch, scale, del, create] = await Promise.all([can("watch", self), rel && can("watch", rel),
      can("patch", self), can("patch", self, "scale"), can("delete", self), res === "cronjobs" && can("create", "batch/v1/jobs")]);
    if (v !== st) return;
    st.may = { patch, scale, delete: del, create };
    const coll = (ok, path, sel) => { const c = ok ? new api.Collection(path, sel) : new api.StaticCollection(); c.subscribe(rerender); return c; };
    st.obj = coll(watch, nsPath(self, ns), "metadata.name=" + name);
    st.events = coll(perms.readEvents, nsPath("v1/events", ns), `involvedObject.kind=${kind},involvedObject.name=${name}`);
    if (rel) st.rel = coll(watchRel, nsPath(rel, ns), byName ? "metadata.name=" + name : "");
    st.denied = !watch;
  } catch (e) {
    st.error = e.message;
  } finally {
    if (v === st) rerender();
  }
}

// matches says whether labels satisfy a LabelSelector or a Service's
// plain map; an empty one matches nothing.
function matches(sel, labels = {}) {
  if (!sel) return false;
  const ml = sel.matchLabels || (sel.matchExpressions ? {} : sel), ex = sel.matchExpressions || [];
  const has = (k) => Object.hasOwn(labels, k);
  return (Object.keys(ml).length + ex.length > 0) && Object.entries(ml).every(([k, x]) => labels[k] === x) && ex.every((e) =>
    e.operator === "In" ? has(e.key) && e.values.includes(labels[e.key]) : e.operator === "NotIn" ? !has(e.key) || !e.values.includes(labels[e.key])
      : e.operator === "Exists" ? has(e.key) : !has(e.key));
}

const owned = (o, ...uids) => (o.metadata.ownerReferences || []).some((r) => uids.includes(r.uid));
const n = (x) => String(x || 0);
const images = (t) => ((t && t.spec && t.spec.containers) || []).map((c) => c.image).join(", ");
const when = (ts) => (ts ? age(ts) + " ago" : "");
const ratio = (a, b) => badge(`${a || 0}/${b || 0}`, (a || 0) >= (b || 0) ? "ok" : "warn");
const flag = (on, text) => (on ? badge(text, "warn") : "no");
const ann = (o, k) => (o.metadata.annotations || {})[k] || "";
const REV = "deployment.kubernetes.io/revision";

// podsOf picks the object's pods from the live pod list; jobs are a
// CronJob's.
function podsOf(res, o, pods, jobs) {
  const sel = o.spec.selector;
  return pods.filter((p) => p.metadata.namespace === o.metadata.namespace && (
    res === "persistentvolumeclaims" ? (p.spec.volumes || []).some((x) => (x.persistentVolumeClaim || {}).claimName === o.metadata.name)
      : res === "cronjobs" ? owned(p, ...jobs.map((j) => j.metadata.uid))
        : (res === "jobs" && owned(p, o.metadata.uid)) || matches(sel, p.metadata.labels)));
}

function podRow(p) {
  const cs = (p.status && p.status.containerStatuses) || [], m = p.metadata;
  const ready = cs.filter((c) => c.ready).length, total = (p.spec.containers || []).length;
  return [h("a", { href: `#/pods/${api.enc(m.namespace)}/${api.enc(m.name)}` }, m.name), badge(`${ready}/${total}`, ready === total ? "ok" : "warn"),
    phaseBadge(p.status && p.status.phase, m.deletionTimestamp), n(cs.reduce((s, c) => s + (c.restartCount || 0), 0)),
    p.spec.nodeName ? h("a", { href: "#/nodes/" + api.enc(p.spec.nodeName) }, p.spec.nodeName) : "—", age(m.creationTimestamp)];
}

// facts are the kind's status at a glance.
function facts(res, o) {
  const s = o.spec || {}, st = o.status || {}, want = s.replicas ?? 1, img = ["Images", images(s.template)];
  return {
    deployments: () => [["Ready", ratio(st.readyReplicas, want)], ["Up to date", n(st.updatedReplicas)], ["Available", n(st.availableReplicas)],
      ["Strategy", (s.strategy || {}).type || "RollingUpdate"], ["Paused", flag(s.paused, "Paused")], img],
    daemonsets: () => [["Ready", ratio(st.numberReady, st.desiredNumberScheduled)], ["Scheduled", n(st.currentNumberScheduled)],
      ["Up to date", n(st.updatedNumberScheduled)], ["Available", n(st.numberAvailable)], img],
    statefulsets: () => [["Ready", ratio(st.readyReplicas, want)], ["Current", n(st.currentReplicas)], ["Updated", n(st.updatedReplicas)],
      ["Service", s.serviceName], ["Revision", st.updateRevision], img],
    replicasets: () => [["Ready", ratio(st.readyReplicas, want)], ["Revision", ann(o, REV)], img],
    jobs: () => [["Completions", ratio(st.succeeded, s.completions ?? 1)], ["Active", n(st.active)], ["Failed", n(st.failed)],
      ["Suspended", flag(s.suspend, "Suspended")], ["Started", when(st.startTime)], ["Completed", when(st.completionTime)], img],
    cronjobs: () => [["Schedule", h("code", null, s.schedule)], ["Time zone", s.timeZone], ["Suspended", flag(s.suspend, "Suspended")],
      ["Concurrency", s.concurrencyPolicy || "Allow"], ["Active", n((st.active || []).length)], ["Last run", when(st.lastScheduleTime)], ["Last success", when(st.lastSuccessfulTime)]],
    services: () => [["Type", s.type || "ClusterIP"], ["Cluster IP", (s.clusterIPs || [s.clusterIP]).join(", ")],
      ["Ports", (s.ports || []).map((p) => `${p.name ? p.name + " " : ""}${p.port}/${p.protocol || "TCP"}→${p.targetPort ?? p.port}${p.nodePort ? " node " + p.nodePort : ""}`).join(", ")],
      ["Selector", chips(s.selector)], ["External", (((st.loadBalancer || {}).ingress) || []).map((i) => i.ip || i.hostname).concat(s.externalIPs || []).join(", ")]],
    persistentvolumeclaims: () => [["Phase", badge(st.phase || "Pending", st.phase === "Bound" ? "ok" : "warn")], ["Volume", s.volumeName],
      ["Capacity", (st.capacity || {}).storage], ["Requested", ((s.resources || {}).requests || {}).storage],
      ["Access modes", (s.accessModes || []).join(", ")], ["Storage class", s.storageClassName]],
  }[res]();
}

// history lists a Deployment's ReplicaSets by revision, each older one
// with a button to roll back to it.
function history(d, rss, path, may, notify) {
  const rev = (rs) => Number(ann(rs, REV));
  const mine = rss.filter((rs) => owned(rs, d.metadata.uid) && rev(rs)).sort((a, b) => rev(b) - rev(a));
  const cur = mine.length && rev(mine[0]), name = d.metadata.name;
  return table("Rollout history", ["Revision", "ReplicaSet", "Images", "Pods", "Change cause", "Age", ""], mine.map((rs) => [
    rev(rs) + (rev(rs) === cur ? " (current)" : ""), h("a", { href: href("replicasets", rs.metadata.namespace, rs.metadata.name) }, rs.metadata.name),
    images(rs.spec.template), ratio((rs.status || {}).readyReplicas, rs.spec.replicas), ann(rs, "kubernetes.io/change-cause"), age(rs.metadata.creationTimestamp),
    rev(rs) !== cur && may.patch && h("button", {
      type: "button", class: "small", id: "rollback-" + rev(rs), "aria-label": `Roll back to revision ${rev(rs)}`, disabled: !!d.spec.paused, title: d.spec.paused && "Resume the rollout first",
      onclick: () => confirmDialog(`Roll ${name} back to revision ${rev(rs)}?`, `Its pods will run ${images(rs.spec.template)} again.`,
        () => rollback(d, path, rs).then(() => notify(`${name} rolled back to revision ${rev(rs)}.`)), "Roll back"),
    }, "Roll back"),
  ]), "No revisions yet.");
}

function endpoints(ep, loaded) {
  const rows = [];
  for (const s of (ep && ep.subsets) || []) {
    const ports = (s.ports || []).map((p) => `${p.port}/${p.protocol || "TCP"}`).join(", ");
    for (const [list, ok] of [[s.addresses, 1], [s.notReadyAddresses, 0]]) {
      for (const a of list || []) {
        const t = a.targetRef;
        rows.push([a.ip, ports, badge(ok ? "ready" : "not ready", ok ? "ok" : "warn"),
          t && t.kind === "Pod" ? h("a", { href: `#/pods/${api.enc(ep.metadata.namespace)}/${api.enc(t.name)}` }, t.name) : "—", a.nodeName || "—"]);
      }
    }
  }
  return table("Endpoints", ["Address", "Ports", "State", "Pod", "Node"], rows, loaded ? "No endpoints: no ready pod matches the selector." : "Loading…");
}

// yaml writes a decoded object as YAML, quoting strings that would read
// as something else.
function yaml(x, ind = "") {
  const obj = (y) => y && typeof y === "object";
  if (Array.isArray(x)) {
    return x.length ? x.map((y) => "\n" + ind + "-" + (obj(y) && Object.keys(y).length ? " " + yaml(y, ind + "  ").trimStart() : yaml(y, ind + "  "))).join("") : " []";
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

export const view = {
  enter(ctx, res, ns, name) {
    stop();
    v = { may: {} };
    if (KINDS[res]) start(v, ctx, res, ns, name);
  },
  leave: stop,
  render({ live, notify }, res, ns, name) {
    const k = KINDS[res] || [res];
    const kind = k[0], crumbs = h("p", { class: "crumbs" }, h("a", { href: "#/workloads" }, "Workloads"), ` / ${kind} / ${ns} /`);
    const page = (...body) => h("section", null, crumbs, h("h1", { tabindex: -1 }, name), h("p", { id: "detail-status" }, ...body));
    if (!KINDS[res]) return page(`The dashboard has no page for ${res}.`);
    if (v.error) return page(h("span", { class: "error", role: "alert" }, "Cannot ask the server what it serves: " + v.error));
    if (v.served === false) return page(`This server does not serve ${kind}s (${k[1]} ${res} is not in its API discovery).`);
    if (v.denied) return page(`This token may not read ${kind}s in ${ns}.`);
    const o = v.obj && v.obj.items.get(ns + "/" + name);
    if (!o) return page(v.obj && v.obj.loaded ? `This ${kind} does not exist (any more).` : "Loading…");
    const path = nsPath(`${k[1]}/${res}`, ns) + "/" + api.enc(name), uid = o.metadata.uid;
    const rel = v.rel ? v.rel.list() : [], jobs = res === "cronjobs" ? rel.filter((j) => owned(j, uid)) : [];
    const pods = podsOf(res, o, live.pods.list(), jobs).sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
    const events = v.events.list().sort((a, b) => (b.lastTimestamp || "").localeCompare(a.lastTimestamp || ""));
    const shown = { ...o, metadata: { ...o.metadata } };
    delete shown.metadata.managedFields;
    return h("section", { class: "detail", "data-kind": kind }, crumbs,
      h("h1", { tabindex: -1 }, name, " ", badge(kind, "muted"), o.metadata.deletionTimestamp && badge("Terminating", "warn")),
      buttons(o, res, kind, k[2], path, v.may, notify),
      dl([...facts(res, o), ["Labels", chips(o.metadata.labels)], ["Created", when(o.metadata.creationTimestamp)],
        ["Owner", owners(o)]]),
      (o.status || {}).conditions && [h("h2", null, "Conditions"), table("Conditions", ["Type", "Status", "Reason", "Message", "Changed"],
        o.status.conditions.map((c) => [c.type, badge(c.status, c.status === "True" ? "ok" : "muted"), c.reason, c.message, when(c.lastTransitionTime)]))],
      res === "deployments" && [h("h2", null, "Rollout history"), history(o, rel, path, v.may, notify)],
      res === "cronjobs" && [h("h2", null, "Jobs"), table("Jobs", ["Name", "Completions", "Active", "Failed", "Age"],
        jobs.map((j) => [h("a", { href: href("jobs", ns, j.metadata.name) }, j.metadata.name), ratio((j.status || {}).succeeded, j.spec.completions ?? 1),
          n((j.status || {}).active), n((j.status || {}).failed), age(j.metadata.creationTimestamp)]), v.rel.loaded ? "No jobs." : "Loading…")],
      res === "services" && [h("h2", null, "Endpoints"), endpoints(v.rel.items.get(ns + "/" + name), v.rel.loaded)],
      h("h2", null, `Pods (${pods.length})`),
      table("Pods", ["Name", "Ready", "Phase", "Restarts", "Node", "Age"], pods.map(podRow), live.pods.loaded ? "No pods." : "Loading…"),
      h("h2", null, "Events"),
      table("Events", ["Type", "Reason", "Message", "Count", "Last seen"],
        events.map((e) => [badge(e.type || "Normal", e.type === "Warning" ? "warn" : "muted"), e.reason, e.message, n(e.count || 1), age(e.lastTimestamp || e.eventTime || e.metadata.creationTimestamp)]),
        v.events.loaded ? "No events." : "Loading…"),
      h("h2", null, "YAML ", v.may.patch && h("a", { href: `#/edit/${res}/${api.enc(ns)}/${api.enc(name)}`, id: "edit-link", class: "small" }, "Edit")),
      h("pre", { class: "yaml", id: "yaml-view", tabindex: 0, "aria-label": `${kind} ${name} as YAML` }, yaml(shown).slice(1)));
  },
};
