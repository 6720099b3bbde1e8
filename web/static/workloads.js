// workloads.js — a pod's page with its containers, events, log and
// console (the lists are in lists.js).
import * as api from "./api.js";
import { h, age, badge, table, dl, chips, phaseBadge, quantity, fmtCPU, fmtBytes } from "./dom.js";
import { confirmDialog } from "./actions.js";
import { consolePanel } from "./console.js";
import { owners } from "./detail.js";

function deleteButton(kind, path, ns, name, notify, id) {
  return h("button", {
    type: "button", class: "danger small", id, "aria-label": `Delete ${kind} ${ns}/${name}`,
    onclick: () => confirmDialog(`Delete ${kind} ${ns}/${name}?`, kind === "pod" ? "The pod is stopped gracefully, then removed." : "Its pods are deleted with it.",
      () => api.request("DELETE", path).then(() => notify(`${kind} ${ns}/${name} deleted.`))),
  }, "Delete");
}

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
