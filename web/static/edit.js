// edit.js — editing an object's YAML in place: the object as YAML in a
// text area, a server dry run that names the fields it refuses, a save
// that sends the resourceVersion it was read at, and on a conflict a diff
// of the server's current version against the edit. The server reads
// YAML, so only the JSON → YAML direction is done here.
import * as api from "./api.js";
import { h } from "./dom.js";
import { RES, resPath } from "./lists.js";

const RESERVED = /^(true|false|null|yes|no|on|off|y|n|~)$/i;
const plain = (s) => /^[A-Za-z_][\w./-]*$/.test(s) && !RESERVED.test(s);

// toYAML writes a JSON value as block YAML: plain words bare, other
// strings quoted as JSON (which YAML reads), text with newlines as a
// literal block.
export function toYAML(v, ind = "") {
  const obj = v && typeof v === "object";
  if (Array.isArray(v)) {
    if (!v.length) return " []";
    return v.map((x) => "\n" + ind + "-" + (x && typeof x === "object" && Object.keys(x).length ? " " + toYAML(x, ind + "  ").slice(ind.length + 3) : toYAML(x, ind + "  "))).join("");
  }
  if (obj) {
    const e = Object.entries(v).filter(([, x]) => x !== undefined);
    if (!e.length) return " {}";
    return e.map(([k, x]) => "\n" + ind + (plain(k) ? k : JSON.stringify(k)) + ":" + toYAML(x, ind + "  ")).join("");
  }
  if (typeof v !== "string") return " " + JSON.stringify(v);
  if (plain(v)) return " " + v;
  if (v.includes("\n") && !/^\s|\r/.test(v)) {
    const body = v.endsWith("\n") ? v.slice(0, -1) : v;
    return " |" + (v.endsWith("\n\n") ? "+" : v.endsWith("\n") ? "" : "-") + body.split("\n").map((l) => "\n" + (l ? ind + l : "")).join("");
  }
  return " " + JSON.stringify(v);
}

const yamlOf = (o) => {
  const m = { ...o.metadata };
  delete m.managedFields;
  return toYAML({ ...o, metadata: m }).slice(1) + "\n";
};

// diff lists the lines of a and b that differ (a longest common
// subsequence of lines), each with "-" (only in a) or "+" (only in b).
export function diff(a, b) {
  a = a.split("\n"); b = b.split("\n");
  if (a.length * b.length > 4e6) return ["(too large to compare)"];
  const w = b.length + 1, L = new Uint32Array((a.length + 1) * w);
  for (let i = a.length - 1; i >= 0; i--) for (let j = b.length - 1; j >= 0; j--)
    L[i * w + j] = a[i] === b[j] ? L[(i + 1) * w + j + 1] + 1 : Math.max(L[(i + 1) * w + j], L[i * w + j + 1]);
  const out = [];
  let i = 0, j = 0;
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && a[i] === b[j]) { i++; j++; }
    else if (i < a.length && (j >= b.length || L[(i + 1) * w + j] >= L[i * w + j + 1])) out.push("- " + a[i++]);
    else out.push("+ " + b[j++]);
  }
  return out;
}

const ed = { text: "", error: "", result: null, conflict: null, busy: false };

async function load(path, rerender) {
  try {
    ed.text = yamlOf(await api.get(path));
    ed.error = "";
  } catch (err) { ed.error = err.message; }
  ed.result = ed.conflict = null;
  rerender();
}

async function send(path, dry, { rerender, notify }) {
  const text = document.getElementById("edit-yaml").value;
  ed.text = text;
  ed.busy = true;
  ed.conflict = null;
  rerender();
  try {
    const o = await api.request("PUT", path + (dry ? "?dryRun=All" : ""), { body: text, contentType: "application/yaml" });
    if (dry) ed.result = { ok: true, message: "The server would accept this." };
    else { ed.result = null; ed.text = yamlOf(o); notify(`${o.metadata.name} saved.`); }
  } catch (err) {
    ed.result = { ok: false, message: err.message, causes: err.causes };
    if (err.code === 409) {
      try { ed.conflict = diff(yamlOf(await api.get(path)), text); } catch (e) { ed.conflict = ["(cannot read the current version: " + e.message + ")"]; }
    }
  }
  ed.busy = false;
  rerender();
}

export const edit = {
  live: false,
  enter({ rerender }, res, ns, name) {
    ed.text = ""; ed.error = ""; ed.result = ed.conflict = null;
    if (RES[res]) load(resPath(res, ns === "-" ? "" : ns, name), rerender);
    else ed.error = `There is no editor for ${res}.`;
  },
  render(c, res, ns, name) {
    const path = RES[res] && resPath(res, ns === "-" ? "" : ns, name);
    const r = ed.result;
    const ta = h("textarea", { id: "edit-yaml", rows: 28, spellcheck: "false", autocomplete: "off", autocapitalize: "off", "aria-describedby": "edit-result", value: ed.text });
    return h("section", null,
      h("p", { class: "crumbs" }, h("a", { href: `#/${res}` }, res), ns === "-" ? " / " : ` / ${ns} / `, h("a", { href: `#/${res}/${api.enc(ns)}/${api.enc(name)}` }, name)),
      h("h1", { tabindex: -1 }, "Edit ", name),
      ed.error ? h("p", { class: "error", role: "alert" }, ed.error) : [
        h("label", { for: "edit-yaml" }, "YAML (saved with the resourceVersion it was read at)"), ta,
        h("div", { class: "actions" },
          h("button", { type: "button", id: "edit-check", disabled: ed.busy, onclick: () => send(path, true, c) }, "Check"),
          h("button", { type: "button", id: "edit-save", class: "primary", disabled: ed.busy, onclick: () => send(path, false, c) }, "Save"),
          h("button", { type: "button", id: "edit-reload", onclick: () => load(path, c.rerender) }, "Reload")),
        h("div", { id: "edit-result", role: "status" }, r ? h("div", { class: "results" }, h("p", { class: r.ok ? "ok" : "error" }, r.message),
          (r.causes || []).length ? h("ul", { class: "causes" }, r.causes.map((x) => h("li", null, h("code", { class: "field" }, x.field || ""), " ", x.message || ""))) : null) : null),
        ed.conflict ? [h("h2", null, "Changed since you opened it"),
          h("p", { class: "muted small" }, "Lines with − are the server's current version, + are yours. Reload to start from the current version."),
          h("pre", { class: "cmd", id: "edit-diff" }, ed.conflict.join("\n"))] : null]);
  },
};
