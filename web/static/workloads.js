// workloads.js — pods, Deployments and DaemonSets, and a pod's page with
// its containers, events and log.
import * as api from "./api.js";
import { h, age, badge, table, dl, chips, phaseBadge, quantity, fmtCPU, fmtBytes } from "./dom.js";
import { confirmDialog, scaleDialog } from "./actions.js";
import { consolePanel } from "./console.js";
import { href, owners } from "./detail.js";

// filter is the namespace shown ("" for all); it outlives re-renders.
const filter = { ns: "" };

function restarts(p) {
  return ((p.status && p.status.containerStatuses) || []).reduce((n, c) => n + (c.restartCount || 0), 0);
}

const byName = (a, b) => (a.metadata.namespace + "/" + a.metadata.name).localeCompare(b.metadata.namespace + "/" + b.metadata.name);

function deleteButton(kind, path, ns, name, notify, id) {
  return h("button", {
    type: "button", class: "danger small", id, "aria-label": `Delete ${kind} ${ns}/${name}`,
    onclick: () => confirmDialog(`Delete ${kind} ${ns}/${name}?`, kind === "pod" ? "The pod is stopped gracefully, then removed." : "Its pods are deleted with it.",
      () => api.request("DELETE", path).then(() => notify(`${kind} ${ns}/${name} deleted.`))),
  }, "Delete");
}

export const list = {
  render({ live, perms, rerender, notify }) {
    const nss = live.namespaces.list().map((n) => n.metadata.name).sort();
    const inNs = (o) => !filter.ns || o.metadata.namespace === filter.ns;
    const pods = live.pods.list().filter(inNs).sort(byName);
    const deps = live.deployments.list().filter(inNs).sort(byName);
    const dss = live.daemonsets.list().filter(inNs).sort(byName);
    const select = h("select", { id: "ns-filter", onchange: (e) => { filter.ns = e.target.value; rerender(); } },
      h("option", { value: "" }, "All namespaces"),
      nss.map((n) => h("option", { value: n }, n)));
    select.value = filter.ns;
    return h("section", null,
      h("h1", { tabindex: -1 }, "Workloads"),
      h("div", { class: "toolbar" }, h("label", { for: "ns-filter" }, "Namespace "), select),
      h("h2", null, `Pods (${pods.length})`),
      table("Pods", ["Name", "Namespace", "Phase", "Node", "Restarts", "Age", "IP"],
        pods.map((p) => [
          h("a", { href: `#/pods/${api.enc(p.metadata.namespace)}/${api.enc(p.metadata.name)}`, class: "name" }, p.metadata.name),
          p.metadata.namespace,
          phaseBadge(p.status && p.status.phase, p.metadata.deletionTimestamp),
          p.spec.nodeName ? h("a", { href: "#/nodes/" + api.enc(p.spec.nodeName) }, p.spec.nodeName) : badge("unscheduled", "warn"),
          String(restarts(p)),
          age(p.metadata.creationTimestamp),
          (p.status && p.status.podIP) || "—",
        ]), live.pods.loaded ? "No pods." : "Loading…"),
      h("h2", null, `Deployments (${deps.length})`),
      table("Deployments", ["Name", "Namespace", "Ready", "Up to date", "Age", ""],
        deps.map((d) => {
          const want = d.spec.replicas ?? 1, st = d.status || {};
          const path = `/apis/apps/v1/namespaces/${api.enc(d.metadata.namespace)}/deployments/${api.enc(d.metadata.name)}`;
          return [h("a", { href: href("deployments", d.metadata.namespace, d.metadata.name), class: "name" }, d.metadata.name), d.metadata.namespace,
            badge(`${st.readyReplicas || 0}/${want}`, (st.readyReplicas || 0) >= want ? "ok" : "warn"),
            String(st.updatedReplicas || 0), age(d.metadata.creationTimestamp),
            h("span", { class: "row-actions" },
              perms.scaleDeployments ? h("button", { type: "button", class: "small", "aria-label": `Scale ${d.metadata.namespace}/${d.metadata.name}`, onclick: () => scaleDialog(d, path, notify) }, "Scale") : null,
              perms.deleteDeployments ? deleteButton("deployment", path, d.metadata.namespace, d.metadata.name, notify) : null)];
        }), live.deployments.loaded ? "No Deployments." : "Loading…"),
      h("h2", null, `DaemonSets (${dss.length})`),
      table("DaemonSets", ["Name", "Namespace", "Ready", "Desired", "Age", ""],
        dss.map((d) => {
          const st = d.status || {};
          const path = `/apis/apps/v1/namespaces/${api.enc(d.metadata.namespace)}/daemonsets/${api.enc(d.metadata.name)}`;
          return [h("a", { href: href("daemonsets", d.metadata.namespace, d.metadata.name), class: "name" }, d.metadata.name), d.metadata.namespace,
            badge(`${st.numberReady || 0}/${st.desiredNumberScheduled || 0}`, (st.numberReady || 0) >= (st.desiredNumberScheduled || 0) ? "ok" : "warn"),
            String(st.desiredNumberScheduled || 0), age(d.metadata.creationTimestamp),
            perms.deleteDaemonSets ? deleteButton("daemonset", path, d.metadata.namespace, d.metadata.name, notify) : ""];
        }), live.daemonsets.loaded ? "No DaemonSets." : "Loading…"));
  },
};

function containerState(st) {
  if (!st) return badge("unknown", "muted");
  if (st.running) return badge("Running", "ok", "since " + st.running.startedAt);
  if (st.waiting) return badge(st.waiting.reason || "Waiting", st.waiting.reason === "ContainerCreating" ? "warn" : "bad", st.waiting.message || "");
  if (st.terminated) {
    const t = st.terminated;
    return badge(`${t.reason || "Terminated"} (${t.exitCode})`, t.exitCode === 0 ? "muted" : "bad", t.message || "");
  }
  return badge("unknown", "muted");
}

// The pod page keeps, per visit, a live collection of the pod's events and
// the log panel (a DOM node moved into each render, so a followed log is
// not lost when the pod changes).
const podView = { events: null, log: null, stream: null, console: null, metrics: null, timer: null };

// fetchMetrics reads the pod's measured use (metrics.k8s.io PodMetrics,
// from its agent's 15 s reports); none yet is an empty list.
async function fetchMetrics(ns, name, rerender) {
  try {
    const m = await api.get(`/apis/metrics.k8s.io/v1beta1/namespaces/${api.enc(ns)}/pods/${api.enc(name)}`);
    podView.metrics = new Map((m.containers || []).map((c) => [c.name, c.usage || {}]));
  } catch (err) {
    podView.metrics = new Map();
  }
  rerender();
}

// useCell shows a container's measured use beside its request and limit.
function useCell(c, res, fmt) {
  const used = podView.metrics && podView.metrics.get(c.name);
  const r = c.resources || {};
  const part = (q) => (q === undefined ? "—" : fmt(quantity(q)));
  return h("span", { class: "use-" + res }, `${used && used[res] !== undefined ? fmt(quantity(used[res])) : "—"} / ${part((r.requests || {})[res])} / ${part((r.limits || {})[res])}`);
}

function stopLog() {
  if (podView.stream) podView.stream.abort();
  podView.stream = null;
}

async function startLog(ns, name, container, follow, out, btn) {
  stopLog();
  const ac = new AbortController();
  podView.stream = ac;
  out.textContent = "";
  out.classList.remove("error");
  btn.textContent = "Stop";
  const q = new URLSearchParams({ tailLines: "100" });
  if (container) q.set("container", container);
  if (follow) q.set("follow", "true");
  try {
    const res = await api.request("GET", `/api/v1/namespaces/${api.enc(ns)}/pods/${api.enc(name)}/log?${q}`, { signal: ac.signal, raw: true });
    const reader = res.body.getReader();
    const dec = new TextDecoder();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      const atEnd = out.scrollTop + out.clientHeight >= out.scrollHeight - 4;
      out.append(dec.decode(value, { stream: true }));
      if (atEnd) out.scrollTop = out.scrollHeight;
    }
    if (!out.textContent) out.textContent = "(the log is empty)";
  } catch (err) {
    if (ac.signal.aborted) return;
    out.classList.add("error");
    out.textContent = "No log: " + err.message;
  } finally {
    if (podView.stream === ac) { podView.stream = null; btn.textContent = "Show log"; }
  }
}

function logPanel(ns, name, containers) {
  const out = h("pre", { class: "log", id: "log-output", tabindex: 0, "aria-label": "Container log", "aria-live": "off" }, "Press “Show log” to read the last 100 lines.");
  const sel = h("select", { id: "log-container" }, containers.map((c) => h("option", { value: c }, c)));
  const follow = h("input", { type: "checkbox", id: "log-follow", checked: true });
  const btn = h("button", { type: "button", id: "log-start" }, "Show log");
  btn.addEventListener("click", () => {
    if (podView.stream) { stopLog(); btn.textContent = "Show log"; return; }
    startLog(ns, name, sel.value, follow.checked, out, btn);
  });
  return h("div", { class: "log-panel" },
    h("div", { class: "toolbar" },
      containers.length > 1 ? [h("label", { for: "log-container" }, "Container "), sel] : null,
      h("label", { class: "check" }, follow, " Follow"), btn),
    out);
}

export const pod = {
  enter({ perms, rerender }, ns, name) {
    podView.events = perms.readEvents ? new api.Collection(`/api/v1/namespaces/${api.enc(ns)}/events`, "involvedObject.name=" + name) : new api.StaticCollection();
    podView.events.subscribe(rerender);
    podView.log = null;
    podView.console = null;
    podView.metrics = null;
    fetchMetrics(ns, name, rerender);
    clearInterval(podView.timer);
    podView.timer = setInterval(() => fetchMetrics(ns, name, rerender), 15000);
  },
  leave() {
    clearInterval(podView.timer);
    podView.timer = null;
    stopLog();
    if (podView.console) podView.console.stop();
    podView.console = null;
    if (podView.events) podView.events.stop();
    podView.events = null;
    podView.log = null;
  },
  render({ live, perms, notify }, ns, name) {
    const p = live.pods.items.get(ns + "/" + name);
    const crumbs = h("p", { class: "crumbs" }, h("a", { href: "#/workloads" }, "Workloads"), ` / ${ns} /`);
    if (!p) {
      return h("section", null, crumbs, h("h1", { tabindex: -1 }, name),
        h("p", null, live.pods.loaded ? "This pod does not exist (any more)." : "Loading…"));
    }
    const st = p.status || {};
    const statuses = new Map(((st.initContainerStatuses || []).concat(st.containerStatuses || [])).map((c) => [c.name, c]));
    const all = (p.spec.initContainers || []).map((c) => ({ ...c, init: true })).concat(p.spec.containers || []);
    if (!podView.log) podView.log = logPanel(ns, name, (p.spec.containers || []).map((c) => c.name));
    if (!podView.console) podView.console = consolePanel(ns, name, (p.spec.containers || []).map((c) => c.name));
    const events = podView.events ? podView.events.list().sort((a, b) => (a.lastTimestamp || "").localeCompare(b.lastTimestamp || "")) : [];
    return h("section", null, crumbs,
      h("h1", { tabindex: -1 }, name, " ", phaseBadge(st.phase, p.metadata.deletionTimestamp)),
      perms.deletePods ? h("div", { class: "actions" }, deleteButton("pod", `/api/v1/namespaces/${api.enc(ns)}/pods/${api.enc(name)}`, ns, name, notify, "delete-pod")) : null,
      dl([
        ["Namespace", ns],
        ["Node", p.spec.nodeName ? h("a", { href: "#/nodes/" + api.enc(p.spec.nodeName) }, p.spec.nodeName) : "not scheduled"],
        ["IP", st.podIP || ""],
        ["QoS", st.qosClass || ""],
        ["Created", age(p.metadata.creationTimestamp) + " ago"],
        ["Reason", [st.reason, st.message].filter(Boolean).join(": ")],
        ["Labels", chips(p.metadata.labels)],
        ["Owner", owners(p)],
      ]),
      h("h2", null, "Containers"),
      table("Containers", ["Name", "Image", "State", "Ready", "Restarts", "CPU used / req / lim", "Memory used / req / lim"],
        all.map((c) => {
          const cs = statuses.get(c.name);
          return [c.name + (c.init ? " (init)" : ""), h("code", null, c.image), containerState(cs && cs.state), cs ? (cs.ready ? "yes" : "no") : "—", String((cs && cs.restartCount) || 0),
            useCell(c, "cpu", fmtCPU), useCell(c, "memory", fmtBytes)];
        })),
      h("h2", null, "Events"),
      table("Events", ["Type", "Reason", "Message", "Count", "Last seen"],
        events.map((e) => [badge(e.type || "Normal", e.type === "Warning" ? "warn" : "muted"), e.reason || "", e.message || "", String(e.count || 1), age(e.lastTimestamp || e.eventTime || e.metadata.creationTimestamp)]),
        podView.events && podView.events.loaded ? "No events." : "Loading…"),
      perms.readLogs ? [h("h2", null, "Log"), podView.log] : null,
      h("h2", null, "Console"),
      podView.console);
  },
};
