// search.js — the global search in the header: nodes, pods, Deployments
// and DaemonSets by name or label, from the live collections (no request
// per keystroke). "/" focuses it, Enter opens the first match, Escape
// clears it.
import * as api from "./api.js";
import { h } from "./dom.js";
import { matcher } from "./lists.js";

const KINDS = [["nodes", "Node"], ["pods", "Pod"], ["deployments", "Deployment"], ["daemonsets", "DaemonSet"]];

// find returns up to max [label, href] of the live objects q matches.
export function find(live, q, max = 12) {
  if (!q.trim()) return [];
  const m = matcher(q), out = [];
  for (const [res, kind] of KINDS) {
    for (const o of live[res] ? live[res].list() : []) {
      if (out.length >= max) return out;
      if (!m(o)) continue;
      const ns = o.metadata.namespace;
      out.push([`${kind} ${ns ? ns + "/" : ""}${o.metadata.name}`, res === "nodes" ? "#/nodes/" + api.enc(o.metadata.name) : `#/${res}/${api.enc(ns)}/${api.enc(o.metadata.name)}`]);
    }
  }
  return out;
}

// initSearch wires the search box; live() returns the collections.
export function initSearch(live) {
  const box = document.getElementById("search"), list = document.getElementById("search-results");
  const close = () => { list.replaceChildren(); list.hidden = true; box.setAttribute("aria-expanded", "false"); };
  const show = () => {
    const found = find(live(), box.value);
    list.replaceChildren(...(found.length ? found.map(([t, href]) => h("li", null, h("a", { href, onclick: () => { box.value = ""; close(); } }, t)))
      : box.value.trim() ? [h("li", { class: "muted" }, "No match.")] : []));
    list.hidden = !box.value.trim();
    box.setAttribute("aria-expanded", String(!list.hidden));
  };
  box.addEventListener("input", show);
  box.parentNode.addEventListener("focusout", (e) => { if (!box.parentNode.contains(e.relatedTarget)) close(); });
  box.addEventListener("keydown", (e) => {
    if (e.key === "Escape") { box.value = ""; close(); }
    if (e.key === "Enter") { const a = list.querySelector("a"); if (a) { location.hash = a.getAttribute("href"); box.value = ""; close(); } }
  });
  // "/" focuses the box on its keyup, so the key itself is not typed there.
  const slash = (e) => e.key === "/" && !/^(INPUT|TEXTAREA|SELECT)$/.test(e.target.tagName) && !e.target.isContentEditable && !document.querySelector("dialog[open]");
  document.addEventListener("keydown", (e) => { if (slash(e)) e.preventDefault(); });
  document.addEventListener("keyup", (e) => { if (slash(e)) box.focus(); });
  window.addEventListener("hashchange", close);
}
