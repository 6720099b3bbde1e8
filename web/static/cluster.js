// cluster.js — the overview, the nodes table and a node's detail page.
import * as api from "./api.js";
import { h, s, quantity, fmtCPU, fmtBytes, age, podRequests, terminal, bar, badge, table, dl, chips, phaseBadge } from "./dom.js";
import { confirmDialog } from "./actions.js";

const PRESSURE = ["MemoryPressure", "DiskPressure", "PIDPressure", "NetworkUnavailable"];

function condition(node, type) {
  return ((node.status && node.status.conditions) || []).find((c) => c.type === type);
}

export function nodeReady(node) {
  const c = condition(node, "Ready");
  return c ? c.status : "Unknown";
}

function underPressure(node) {
  return PRESSURE.some((t) => { const c = condition(node, t); return c && c.status === "True"; });
}

function lastHeartbeat(node) {
  let t = "";
  for (const c of (node.status && node.status.conditions) || []) {
    if (c.lastHeartbeatTime && c.lastHeartbeatTime > t) t = c.lastHeartbeatTime;
  }
  return t;
}

// usageByNode sums the requests of the unfinished pods bound to each node.
function usageByNode(pods) {
  const m = new Map();
  for (const p of pods) {
    if (!p.spec.nodeName || terminal(p)) continue;
    const u = m.get(p.spec.nodeName) || { cpu: 0, memory: 0, pods: 0 };
    const r = podRequests(p);
    u.cpu += r.cpu; u.memory += r.memory; u.pods++;
    m.set(p.spec.nodeName, u);
  }
  return m;
}

function alloc(node, res) {
  const st = node.status || {};
  return quantity((st.allocatable || {})[res] ?? (st.capacity || {})[res]);
}

function statusBadge(node) {
  const r = nodeReady(node);
  const out = [badge(r === "True" ? "Ready" : r === "False" ? "NotReady" : "Unknown", r === "True" ? "ok" : "bad")];
  if (node.spec && node.spec.unschedulable) out.push(" ", badge("Cordoned", "warn", "SchedulingDisabled"));
  return out;
}

// Short names of the conditions other than Ready, for what True means and
// what False means.
const CONDITION_WORDS = {
  MemoryPressure: ["Memory", "pressure"], DiskPressure: ["Disk", "pressure"],
  PIDPressure: ["PIDs", "pressure"], NetworkUnavailable: ["Network", "unavailable"],
};

function conditionBadges(node) {
  const cs = (node.status && node.status.conditions) || [];
  const out = cs.filter((c) => c.type !== "Ready").map((c) => {
    const [word, bad] = CONDITION_WORDS[c.type] || [c.type, "true"];
    const title = `${c.type}=${c.status}${c.message ? ": " + c.message : ""}`;
    if (c.status === "True") return badge(`${word} ${bad}`, "bad", title);
    if (c.status === "False") return badge(`${word} ok`, "ok", title);
    return badge(`${word} ?`, "muted", title);
  });
  return out.length ? h("span", { class: "chips" }, out) : "—";
}

function loading(live, ...names) {
  return names.some((n) => !live[n].loaded);
}

function card(label, value, tone, href) {
  const inner = [h("span", { class: "card-value" }, String(value)), h("span", { class: "card-label" }, label)];
  return href ? h("a", { class: "card " + (tone || ""), href }, inner) : h("div", { class: "card " + (tone || "") }, inner);
}

export const overview = {
  render({ live }) {
    const nodes = live.nodes.list();
    const pods = live.pods.list();
    const ready = nodes.filter((n) => nodeReady(n) === "True").length;
    const phases = { Running: 0, Pending: 0, Succeeded: 0, Failed: 0, Unknown: 0 };
    for (const p of pods) phases[(p.status && p.status.phase) || "Pending"] = (phases[(p.status && p.status.phase) || "Pending"] || 0) + 1;
    const use = usageByNode(pods);
    let cpuReq = 0, cpuAlloc = 0, memReq = 0, memAlloc = 0;
    for (const n of nodes) {
      const u = use.get(n.metadata.name) || { cpu: 0, memory: 0 };
      cpuReq += u.cpu; memReq += u.memory;
      cpuAlloc += alloc(n, "cpu"); memAlloc += alloc(n, "memory");
    }
    return h("section", null,
      h("h1", { tabindex: -1 }, "Overview"),
      loading(live, "nodes", "pods") ? h("p", { class: "muted" }, "Loading…") : null,
      h("h2", null, "Nodes"),
      h("div", { class: "cards", id: "node-counts" },
        card("Total", nodes.length, "", "#/nodes"),
        card("Ready", ready, "ok", "#/nodes"),
        card("NotReady", nodes.length - ready, nodes.length - ready ? "bad" : "", "#/nodes"),
        card("Under pressure", nodes.filter(underPressure).length, nodes.some(underPressure) ? "warn" : "", "#/nodes")),
      h("h2", null, "Pods"),
      h("div", { class: "cards", id: "pod-counts" },
        Object.entries(phases).map(([ph, n]) => card(ph, n, n && ph === "Failed" ? "bad" : n && ph === "Pending" ? "warn" : "", "#/workloads"))),
      h("h2", null, "Cluster usage"),
      h("p", { class: "muted small" }, "Requested by pods against allocatable on all nodes."),
      h("div", { class: "usage" },
        h("div", null, h("span", { class: "usage-label" }, "CPU"), bar(cpuReq, cpuAlloc, fmtCPU, "Cluster CPU requested of allocatable")),
        h("div", null, h("span", { class: "usage-label" }, "Memory"), bar(memReq, memAlloc, fmtBytes, "Cluster memory requested of allocatable"))));
  },
};

export const nodes = {
  render({ live }) {
    const list = live.nodes.list().sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
    const use = usageByNode(live.pods.list());
    const rows = list.map((n) => {
      const u = use.get(n.metadata.name) || { cpu: 0, memory: 0, pods: 0 };
      const hb = lastHeartbeat(n);
      return [
        h("a", { href: "#/nodes/" + api.enc(n.metadata.name), class: "name" }, n.metadata.name),
        statusBadge(n),
        conditionBadges(n),
        alloc(n, "pods") ? `${u.pods} / ${alloc(n, "pods")}` : u.pods ? `${u.pods} / —` : "—",
        bar(u.cpu, alloc(n, "cpu"), fmtCPU, `CPU requested on ${n.metadata.name}`),
        bar(u.memory, alloc(n, "memory"), fmtBytes, `Memory requested on ${n.metadata.name}`),
        (n.status && n.status.nodeInfo && n.status.nodeInfo.kubeletVersion) || "—",
        h("span", { title: hb ? "stored heartbeat " + hb + " (may lag the live one by up to 5 minutes)" : "" }, age(hb)),
      ];
    });
    return h("section", null,
      h("h1", { tabindex: -1 }, "Nodes"),
      loading(live, "nodes") ? h("p", { class: "muted" }, "Loading…") :
        table("Nodes", ["Name", "Status", "Conditions", "Pods", "CPU requested", "Memory requested", "Agent", "Heartbeat"], rows, "No nodes yet. Use “Add node” to create a join token."));
  },
};

// The node page fetches the usage history when it opens and again (at most
// every few seconds) when the node or its pods change.
const nodeView = { name: "", usage: null, error: "", timer: null, seen: "" };

async function fetchUsage(name, rerender) {
  try {
    nodeView.usage = await api.get(`/api/v1/skiff/nodes/${api.enc(name)}/usage`);
    nodeView.error = "";
  } catch (err) {
    nodeView.error = err.message;
  }
  if (nodeView.name === name) rerender();
}

export const node = {
  enter({ perms, rerender }, name) {
    Object.assign(nodeView, { name, usage: null, error: "", seen: "", admin: perms.admin });
    if (perms.admin) fetchUsage(name, rerender); // the usage history is the admin's
  },
  leave() { clearTimeout(nodeView.timer); nodeView.name = ""; },
  render({ live, perms, rerender, notify }, name) {
    const n = live.nodes.items.get("/" + name);
    if (!n) {
      return h("section", null, h("h1", { tabindex: -1 }, name),
        h("p", null, live.nodes.loaded ? "This node does not exist (any more). " : "Loading…", h("a", { href: "#/nodes" }, "All nodes")));
    }
    const pods = live.pods.list().filter((p) => p.spec.nodeName === name);
    const fingerprint = n.metadata.resourceVersion + pods.map((p) => p.metadata.resourceVersion).join();
    if (nodeView.admin && nodeView.seen && nodeView.seen !== fingerprint) {
      clearTimeout(nodeView.timer);
      nodeView.timer = setTimeout(() => fetchUsage(name, rerender), 3000);
    }
    nodeView.seen = fingerprint;
    const st = n.status || {}, info = st.nodeInfo || {};
    const u = usageByNode(pods).get(name) || { cpu: 0, memory: 0, pods: 0 };
    const cordoned = !!(n.spec && n.spec.unschedulable);
    const cordon = async () => {
      try {
        await api.mergePatch(`/api/v1/nodes/${api.enc(name)}`, { spec: { unschedulable: cordoned ? null : true } });
        notify(`${name} ${cordoned ? "uncordoned" : "cordoned"}.`);
      } catch (err) { notify(err.message, "bad"); }
    };
    const hb = nodeView.usage && nodeView.usage.lastHeartbeat;
    return h("section", null,
      h("p", { class: "crumbs" }, h("a", { href: "#/nodes" }, "Nodes"), " / "),
      h("h1", { tabindex: -1 }, name, " ", statusBadge(n)),
      h("div", { class: "actions" },
        perms.patchNodes ? h("button", { id: "cordon", type: "button", onclick: cordon }, cordoned ? "Uncordon" : "Cordon") : null,
        perms.deleteNodes ? h("button", { id: "delete-node", type: "button", class: "danger", onclick: () => confirmDialog(`Delete node ${name}?`, "Its pods are deleted by the node lifecycle controller; the agent must join again.", () => api.request("DELETE", `/api/v1/nodes/${api.enc(name)}`).then(() => { notify(`Node ${name} deleted.`); location.hash = "#/nodes"; })) }, "Delete") : null),
      h("div", { class: "grid2" },
        h("div", null,
          h("h2", null, "Details"),
          dl([
            ["Pod CIDR", (n.spec && n.spec.podCIDR) || ""],
            ["Addresses", ((st.addresses || []).map((a) => `${a.address} (${a.type})`).join(", "))],
            ["Agent", info.kubeletVersion || ""],
            ["OS", [info.osImage, info.kernelVersion, info.architecture].filter(Boolean).join(" · ")],
            ["Runtime", info.containerRuntimeVersion || ""],
            ["Heartbeat", hb ? age(hb) + " ago" : age(lastHeartbeat(n)) + " ago (stored)"],
            ["Created", age(n.metadata.creationTimestamp) + " ago"],
            ["Labels", chips(n.metadata.labels)],
            ["Taints", (n.spec && n.spec.taints && n.spec.taints.length) ? h("span", { class: "chips" }, n.spec.taints.map((t) => h("code", { class: "chip" }, `${t.key}${t.value ? "=" + t.value : ""}:${t.effect}`))) : "—"],
          ])),
        h("div", null,
          h("h2", null, "Resources"),
          h("div", { class: "usage" },
            h("div", null, h("span", { class: "usage-label" }, "CPU"), bar(u.cpu, alloc(n, "cpu"), fmtCPU, "CPU requested of allocatable")),
            h("div", null, h("span", { class: "usage-label" }, "Memory"), bar(u.memory, alloc(n, "memory"), fmtBytes, "Memory requested of allocatable")),
            h("div", null, h("span", { class: "usage-label" }, "Pods"), bar(u.pods, alloc(n, "pods"), String, "Pods of max pods"))),
          measuredBars(nodeView.usage, n),
          h("h2", null, "Last hour"),
          usageChart(nodeView.usage, nodeView.error))),
      h("h2", null, "Conditions"),
      table("Conditions", ["Type", "Status", "Reason", "Message", "Changed"],
        (st.conditions || []).map((c) => [c.type, badge(c.status, (c.type === "Ready") === (c.status === "True") ? "ok" : c.status === "Unknown" ? "muted" : "bad"), c.reason || "", c.message || "", age(c.lastTransitionTime)])),
      h("h2", null, "Pods"),
      table("Pods on " + name, ["Name", "Namespace", "Phase", "IP", "Age"],
        pods.map((p) => [h("a", { href: `#/pods/${api.enc(p.metadata.namespace)}/${api.enc(p.metadata.name)}` }, p.metadata.name), p.metadata.namespace, phaseBadge(p.status && p.status.phase, p.metadata.deletionTimestamp), (p.status && p.status.podIP) || "—", age(p.metadata.creationTimestamp)]),
        "No pods on this node."));
  },
};

// measuredBars shows what the node's agent last measured (CPU over its
// last 15 s window, memory working set) against allocatable, beside the
// requested figures above.
function measuredBars(usage, n) {
  const m = usage && usage.measured;
  if (!m || !m.length) return h("p", { class: "muted small", id: "measured-none" }, "No measured usage yet: the agent reports every 15 s.");
  const last = m[m.length - 1];
  return h("div", { class: "usage measured", id: "measured" },
    h("div", null, h("span", { class: "usage-label" }, "CPU used"), h("span", { id: "cpu-used" }, bar(last.cpuMilli / 1000, alloc(n, "cpu"), fmtCPU, "CPU used (measured) of allocatable"))),
    h("div", null, h("span", { class: "usage-label" }, "Memory used"), h("span", { id: "memory-used" }, bar(last.memoryBytes, alloc(n, "memory"), fmtBytes, "Memory working set (measured) of allocatable"))));
}

// usageChart draws the samples as two lines over up to the last hour, each as a
// share of allocatable: CPU requested and memory available (allocatable
// minus requested).
function usageChart(usage, error) {
  if (error) return h("p", { class: "error" }, "Usage history unavailable: " + error);
  if (!usage) return h("p", { class: "muted" }, "Loading…");
  const ss = usage.samples || [];
  if (!ss.length) return h("p", { class: "muted" }, `No samples yet: the server takes one every ${usage.intervalSeconds}s.`);
  const W = 480, H = 160, P = 4;
  // The window is the samples' span, at least 10 and at most 60 minutes.
  const measured = usage.measured || [];
  const end = Math.max(Date.parse(ss[ss.length - 1].time), measured.length ? Date.parse(measured[measured.length - 1].time) : 0);
  const span = Math.min(3600e3, Math.max(600e3, end - Date.parse(ss[0].time)));
  const start = end - span;
  const x = (t) => P + ((Date.parse(t) - start) / span) * (W - 2 * P);
  const y = (frac) => H - P - Math.max(0, Math.min(1, frac)) * (H - 2 * P);
  const line = (f) => ss.map((v) => `${x(v.time).toFixed(1)},${y(f(v)).toFixed(1)}`).join(" ");
  const cpu = (v) => (v.cpuAllocatableMilli ? v.cpuRequestedMilli / v.cpuAllocatableMilli : 0);
  const mem = (v) => (v.memoryAllocatableBytes ? (v.memoryAllocatableBytes - v.memoryRequestedBytes) / v.memoryAllocatableBytes : 0);
  const last = ss[ss.length - 1];
  const dots = (f, cls) => [ss.length > 1 ? s("polyline", { points: line(f), class: cls }) : null, s("circle", { cx: x(last.time), cy: y(f(last)), r: 3, class: cls })];
  const m = measured.filter((v) => Date.parse(v.time) >= start);
  const allocCPU = last.cpuAllocatableMilli;
  const used = m.length && allocCPU ? [m.length > 1 ? s("polyline", { points: m.map((v) => `${x(v.time).toFixed(1)},${y(v.cpuMilli / allocCPU).toFixed(1)}`).join(" "), class: "used" }) : null,
    s("circle", { cx: x(m[m.length - 1].time), cy: y(m[m.length - 1].cpuMilli / allocCPU), r: 3, class: "used" })] : null;
  const desc = `CPU requested ${Math.round(cpu(last) * 100)}% of allocatable, memory available ${fmtBytes(last.memoryAllocatableBytes - last.memoryRequestedBytes)} (${Math.round(mem(last) * 100)}%), ${ss.length} samples`;
  return h("figure", { class: "chart" },
    s("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": desc },
      [0.25, 0.5, 0.75].map((f) => s("line", { x1: P, x2: W - P, y1: y(f), y2: y(f), class: "grid" })),
      s("rect", { x: P, y: P, width: W - 2 * P, height: H - 2 * P, class: "frame" }),
      dots(mem, "mem"), dots(cpu, "cpu"), used),
    h("figcaption", null,
      h("span", { class: "key mem" }, "memory available"), " ", h("span", { class: "key cpu" }, "CPU requested"),
      m.length ? [" ", h("span", { class: "key used" }, "CPU used (measured)")] : null,
      h("span", { class: "muted small" }, ` — % of allocatable over the last ${Math.round(span / 60e3)} min; ${desc}.`)));
}
