// rollout.js — the actions of a detail page, each one API call as kubectl
// makes it: scale, rollout restart, pause and resume, rollout undo, create
// job --from=cronjob, suspend and resume, delete.
import * as api from "./api.js";
import { h } from "./dom.js";
import { confirmDialog, scaleDialog } from "./actions.js";

// stamp is now as kubectl writes it (RFC 3339, whole seconds).
const stamp = () => new Date().toISOString().replace(/\.\d+Z$/, "Z");

const patch = (path, body) => api.mergePatch(path, body);

// restart sets the annotation kubectl rollout restart sets on the pod
// template: the template changes, so the controller replaces every pod.
export const restart = (path) => patch(path, { spec: { template: { metadata: { annotations: { "kubectl.kubernetes.io/restartedAt": stamp() } } } } });

// rollback does what kubectl rollout undo --to-revision does: the
// Deployment's template becomes the ReplicaSet's (less its
// pod-template-hash label) in one JSON patch, which also carries the
// ReplicaSet's change cause. The resourceVersion it carries makes it a
// conflict (409), not an overwrite, when the Deployment changed since the
// page showed it.
export function rollback(d, path, rs) {
  const tmpl = structuredClone(rs.spec.template);
  if (tmpl.metadata && tmpl.metadata.labels) delete tmpl.metadata.labels["pod-template-hash"];
  const ann = { ...(d.metadata.annotations || {}) };
  const cause = (rs.metadata.annotations || {})["kubernetes.io/change-cause"];
  if (cause) ann["kubernetes.io/change-cause"] = cause; else delete ann["kubernetes.io/change-cause"];
  return api.request("PATCH", path, {
    contentType: "application/json-patch+json",
    body: [
      { op: "replace", path: "/metadata/resourceVersion", value: d.metadata.resourceVersion },
      { op: "replace", path: "/spec/template", value: tmpl },
      { op: "add", path: "/metadata/annotations", value: ann },
    ],
  });
}

// trigger creates a Job from a CronJob's template now, as kubectl create
// job --from=cronjob/NAME does: owned by the CronJob, marked manual.
export function trigger(cj) {
  const m = cj.metadata, t = cj.spec.jobTemplate || {};
  const tm = t.metadata || {};
  const name = `${m.name.slice(0, 44)}-manual-${Date.now().toString(36).slice(-6)}`;
  return api.request("POST", `/apis/batch/v1/namespaces/${api.enc(m.namespace)}/jobs`, {
    body: {
      apiVersion: "batch/v1", kind: "Job",
      metadata: {
        name, namespace: m.namespace, labels: tm.labels,
        annotations: { ...(tm.annotations || {}), "cronjob.kubernetes.io/instantiate": "manual" },
        ownerReferences: [{ apiVersion: "batch/v1", kind: "CronJob", name: m.name, uid: m.uid, controller: true }],
      },
      spec: t.spec,
    },
  });
}

// buttons returns the action buttons for o that the token may use (may:
// {patch, scale, delete, create}); acts lists the kind's actions.
export function buttons(o, res, kind, acts, path, may, notify) {
  const { name, namespace: ns } = o.metadata;
  const id = `${ns}/${name}`;
  const run = (label, p, done) => p.then(() => notify(done), (e) => notify(`${label} ${id}: ${e.message}`, "bad"));
  const b = (key, label, onclick, cls) => h("button", { type: "button", id: "act-" + key, class: cls, onclick }, label);
  const out = [];
  const has = (a) => acts.includes(a);
  if (has("scale") && may.scale) out.push(b("scale", "Scale", () => scaleDialog(o, path, notify)));
  if (has("restart") && may.patch) {
    out.push(b("restart", "Restart", () => confirmDialog(`Restart ${kind} ${id}?`, "Every pod is replaced, following the rollout strategy.",
      () => restart(path).then(() => notify(`${kind} ${id} restarting.`)), "Restart")));
  }
  if (has("pause") && may.patch) {
    const paused = !!o.spec.paused;
    out.push(b(paused ? "resume" : "pause", paused ? "Resume rollout" : "Pause rollout",
      () => run(paused ? "Resume" : "Pause", patch(path, { spec: { paused: !paused } }), `${kind} ${id} ${paused ? "resumed" : "paused"}.`)));
  }
  if (has("trigger") && may.create) {
    out.push(b("trigger", "Run now", () => run("Run", trigger(o), `Job created from ${id}.`)));
  }
  if (has("suspend") && may.patch) {
    const s = !!o.spec.suspend;
    out.push(b(s ? "unsuspend" : "suspend", s ? "Resume" : "Suspend",
      () => run(s ? "Resume" : "Suspend", patch(path, { spec: { suspend: !s } }), `${kind} ${id} ${s ? "resumed" : "suspended"}.`)));
  }
  if (may.delete) {
    out.push(b("delete", "Delete", () => confirmDialog(`Delete ${kind} ${id}?`,
      res === "services" || res === "persistentvolumeclaims" ? "This cannot be undone." : "Its pods are deleted with it.",
      () => api.request("DELETE", path).then(() => notify(`${kind} ${id} deleted.`))), "danger"));
  }
  return out.length ? h("div", { class: "actions" }, out) : null;
}
