// actions.js — changing the cluster: apply pasted YAML, confirm a delete,
// scale a Deployment, create a join token.
import * as api from "./api.js";
import { h } from "./dom.js";
import { splitDocuments, identify } from "./manifest.js";

// openDialog shows a modal built by body(close); Escape and Cancel close it
// and focus returns to where it was.
function openDialog(title, body) {
  const dlg = document.getElementById("dialog");
  const back = document.activeElement;
  const close = () => { if (dlg.open) dlg.close(); };
  dlg.replaceChildren(h("h2", { id: "dialog-title" }, title), body(close));
  dlg.setAttribute("aria-labelledby", "dialog-title");
  dlg.addEventListener("close", () => { if (back && back.isConnected) back.focus(); }, { once: true });
  dlg.showModal();
  const first = dlg.querySelector("input, [autofocus], button");
  if (first) first.focus();
}

// confirmDialog asks before doing something that cannot be undone; run
// returns a promise whose failure is shown in the dialog; label names the
// button that does it.
export function confirmDialog(title, detail, run, label = "Delete") {
  openDialog(title, (close) => {
    const err = h("p", { class: "error", role: "alert" });
    const ok = h("button", { type: "button", class: "danger", id: "confirm-ok" }, label);
    ok.addEventListener("click", async () => {
      ok.disabled = true;
      try { await run(); close(); } catch (e) { err.textContent = e.message; ok.disabled = false; }
    });
    return h("div", null, h("p", null, detail), err,
      h("div", { class: "actions" }, h("button", { type: "button", id: "confirm-cancel", autofocus: true, onclick: close }, "Cancel"), ok));
  });
}

// scaleDialog sets a Deployment's replicas through its scale subresource.
export function scaleDialog(d, path, notify) {
  openDialog(`Scale ${d.metadata.namespace}/${d.metadata.name}`, (close) => {
    const input = h("input", { type: "number", min: 0, max: 10000, id: "scale-replicas", value: String(d.spec.replicas ?? 1), required: true, inputmode: "numeric" });
    const err = h("p", { class: "error", role: "alert" });
    const form = h("form", null,
      h("label", { for: "scale-replicas" }, "Replicas "), input, err,
      h("div", { class: "actions" }, h("button", { type: "button", onclick: close }, "Cancel"), h("button", { type: "submit", class: "primary" }, "Scale")));
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      const n = Number(input.value);
      if (!Number.isInteger(n) || n < 0) { err.textContent = "Replicas must be a whole number, 0 or more."; return; }
      try {
        await api.mergePatch(path + "/scale", { spec: { replicas: n } });
        notify(`${d.metadata.name} scaled to ${n}.`);
        close();
      } catch (ex) { err.textContent = ex.message; }
    });
    return form;
  });
}

// applyOne creates one document, or replaces the object when it exists
// (an unconditional PUT of the same body, like kubectl replace). It
// returns a result line.
async function applyOne(doc, defaultNs) {
  const id = identify(doc);
  if (!id.kind) return { ok: false, what: "document", message: "no kind: found at the top level" };
  const paths = api.objectPath(id.kind, id.namespace || defaultNs, id.name);
  const what = `${id.kind}${id.name ? " " + id.name : ""}`;
  if (!paths) return { ok: false, what, message: `skiff does not serve kind ${id.kind}` };
  try {
    await api.request("POST", paths.collection, { body: doc, contentType: "application/yaml" });
    return { ok: true, what, message: "created" };
  } catch (err) {
    if (!(err.reason === "AlreadyExists" && paths.object)) return { ok: false, what, message: err.message, causes: err.causes };
  }
  try {
    await api.request("PUT", paths.object, { body: doc, contentType: "application/yaml" });
    return { ok: true, what, message: "updated" };
  } catch (err) {
    return { ok: false, what, message: err.message, causes: err.causes };
  }
}

// The apply page's text and results survive re-renders.
const applyState = { text: "", ns: "", results: [], busy: false };

export const apply = {
  live: false, // re-rendered only by its own actions, not by watch events
  render({ perms, rerender, notify }) {
    // A token bound in one namespace applies there unless told otherwise.
    if (!applyState.ns) applyState.ns = perms.ns || "default";
    const ta = h("textarea", { id: "yaml", rows: 16, spellcheck: "false", autocapitalize: "off", "aria-describedby": "yaml-help", value: applyState.text,
      oninput: (e) => { applyState.text = e.target.value; } });
    const ns = h("input", { id: "apply-ns", value: applyState.ns, size: 16, autocapitalize: "off", oninput: (e) => { applyState.ns = e.target.value; } });
    const form = h("form", { id: "apply-form" },
      h("label", { for: "yaml" }, "Manifest (YAML or JSON; several documents separated by ---)"),
      ta,
      h("p", { id: "yaml-help", class: "muted small" }, "Each object is created, or replaced when it exists already. Supported kinds: Pod, Deployment, DaemonSet, Secret, ConfigMap, Namespace, Node."),
      h("div", { class: "toolbar" },
        h("label", { for: "apply-ns" }, "Namespace when none is given "), ns,
        h("button", { type: "submit", class: "primary", id: "apply-submit", disabled: applyState.busy }, applyState.busy ? "Applying…" : "Apply")));
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      const docs = splitDocuments(applyState.text);
      if (!docs.length) { applyState.results = [{ ok: false, what: "manifest", message: "it is empty" }]; rerender(); return; }
      applyState.busy = true;
      rerender();
      const results = [];
      for (const d of docs) results.push(await applyOne(d, applyState.ns.trim() || "default"));
      applyState.results = results;
      applyState.busy = false;
      const failed = results.filter((r) => !r.ok).length;
      notify(failed ? `${failed} of ${results.length} failed.` : `Applied ${results.length} object(s).`, failed ? "bad" : "ok");
      rerender();
    });
    return h("section", null,
      h("h1", { tabindex: -1 }, "Apply YAML"),
      form,
      applyState.results.length ? h("ul", { class: "results", id: "apply-results", "aria-live": "polite" },
        applyState.results.map((r) => h("li", { class: r.ok ? "ok" : "bad" },
          h("strong", null, r.what), ": ", r.message,
          r.causes && r.causes.length ? h("ul", { class: "causes" }, r.causes.map((c) => h("li", null, c.field ? [h("code", { class: "field" }, c.field), ": "] : null, c.message))) : null))) : null);
  },
};

// The join page shows the token it created once, until the page is left.
const joinState = { created: null, error: "", desc: "", ttl: "24h" };

export const join = {
  live: false,
  leave() { Object.assign(joinState, { created: null, error: "", desc: "" }); },
  render({ rerender }) {
    const desc = h("input", { id: "token-desc", size: 24, placeholder: "e.g. pump station 4", value: joinState.desc, oninput: (e) => { joinState.desc = e.target.value; } });
    const ttl = h("select", { id: "token-ttl", onchange: (e) => { joinState.ttl = e.target.value; } }, [["1h", "1 hour"], ["24h", "24 hours"], ["168h", "7 days"], ["0s", "never expires"]].map(([v, l]) => h("option", { value: v, selected: v === joinState.ttl }, l)));
    const form = h("form", { id: "token-form" },
      h("div", { class: "toolbar" },
        h("label", { for: "token-desc" }, "Description "), desc,
        h("label", { for: "token-ttl" }, "Expires after "), ttl,
        h("button", { type: "submit", class: "primary", id: "token-create" }, "Create join token")));
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      try {
        joinState.created = await api.request("POST", "/api/v1/skiff/tokens", { body: { ttl: ttl.value, description: desc.value.trim() } });
        joinState.error = "";
      } catch (err) { joinState.error = err.message; joinState.created = null; }
      rerender();
    });
    let result = null;
    if (joinState.error) result = h("p", { class: "error", role: "alert" }, joinState.error);
    if (joinState.created) {
      const cmd = `skiff agent --server ${location.origin} --token ${joinState.created.token}`;
      const copy = h("button", { type: "button", id: "copy-cmd" }, "Copy");
      const pre = h("pre", { class: "cmd", id: "join-cmd", tabindex: 0 }, cmd);
      copy.addEventListener("click", async () => {
        try { await navigator.clipboard.writeText(cmd); copy.textContent = "Copied"; } catch {
          getSelection().selectAllChildren(pre); copy.textContent = "Selected: press Ctrl+C";
        }
      });
      result = h("div", { class: "join-result", role: "status" },
        h("p", null, "Run this on the new machine (the token is shown only now", joinState.created.expires ? `; it expires ${new Date(joinState.created.expires).toLocaleString()}` : "", "):"),
        pre, copy);
    }
    return h("section", null, h("h1", { tabindex: -1 }, "Add a node"),
      h("p", null, "A join token lets one or more machines join as nodes. The agent checks the server's CA against the token, so the command needs nothing else."),
      form, result);
  },
};
