// rollout.js — a detail page's actions, each the API call kubectl makes:
// scale, rollout restart/pause/resume/undo, create job --from=cronjob,
// suspend and resume, delete.
import * as api from "./api.js";
import { h } from "./dom.js";
import { confirmDialog, scaleDialog } from "./actions.js";

// rollback does what kubectl rollout undo --to-revision does: one JSON
// patch makes the Deployment's template the ReplicaSet's (less its
// pod-template-hash label) and carries its change cause. Its first op
// tests that the template is still the one the page showed, so a rollback
// from an out-of-date page fails instead of undoing someone's change;
// status writes (the controller's, all the time) do not get in the way.
export function rollback(d, path, rs) {
  const tmpl = structuredClone(rs.spec.template), ann = { ...d.metadata.annotations }, key = "kubernetes.io/change-cause";
  delete ((tmpl.metadata || {}).labels || {})["pod-template-hash"];
  ann[key] = (rs.metadata.annotations || {})[key];
  return api.request("PATCH", path, {
    contentType: "application/json-patch+json",
    body: [{ op: "test", path: "/spec/template", value: d.spec.template },
      { op: "replace", path: "/spec/template", value: tmpl }, { op: "add", path: "/metadata/annotations", value: ann }],
  }).catch((e) => { // the other ops cannot fail: a 400 is the test's
    throw e.code === 400 ? new Error(`The template of ${d.metadata.name} changed since this page showed it; look again.`) : e;
  });
}

// trigger creates a Job from a CronJob's template, as kubectl create job
// --from=cronjob/NAME does: owned by the CronJob, marked manual.
export function trigger(cj) {
  const m = cj.metadata, t = cj.spec.jobTemplate, tm = t.metadata || {};
  return api.request("POST", `/apis/batch/v1/namespaces/${api.enc(m.namespace)}/jobs`, {
    body: {
      apiVersion: "batch/v1", kind: "Job", spec: t.spec,
      metadata: {
        name: `${m.name.slice(0, 44)}-manual-${Date.now().toString(36).slice(-6)}`, labels: tm.labels,
        annotations: { ...tm.annotations, "cronjob.kubernetes.io/instantiate": "manual" },
        ownerReferences: [{ apiVersion: "batch/v1", kind: "CronJob", name: m.name, uid: m.uid, controller: true }],
      },
    },
  });
}

// buttons returns the buttons of the kind's actions (acts) that the token
// may use (may: patch, scale, delete, create), or null.
export function buttons(o, res, kind, acts, path, may, notify) {
  const id = `${kind} ${o.metadata.namespace}/${o.metadata.name}`;
  const out = [];
  const b = (key, label, onclick, cls) => out.push(h("button", { type: "button", id: "act-" + key, class: cls, onclick }, label));
  // toggle flips a boolean spec field by merge patch; done is what true means.
  const toggle = (field, on, off, labelOn, labelOff, done) => {
    const is = !!o.spec[field];
    b(is ? off : on, is ? labelOff : labelOn, () => api.mergePatch(path, { spec: { [field]: !is } })
      .then(() => notify(`${id} ${is ? "resumed" : done}.`), (e) => notify(`${id}: ${e.message}`, "bad")));
  };
  if (acts.includes("scale") && may.scale) b("scale", "Scale", () => scaleDialog(o, path, notify));
  if (acts.includes("restart") && may.patch) {
    // The annotation kubectl rollout restart sets: a new template, so new pods.
    const at = () => new Date().toISOString().replace(/\.\d+Z$/, "Z");
    b("restart", "Restart", () => confirmDialog(`Restart ${id}?`, "Every pod is replaced, following the rollout strategy.",
      () => api.mergePatch(path, { spec: { template: { metadata: { annotations: { "kubectl.kubernetes.io/restartedAt": at() } } } } })
        .then(() => notify(`${id} restarting.`)), "Restart"));
  }
  if (acts.includes("pause") && may.patch) toggle("paused", "pause", "resume", "Pause rollout", "Resume rollout", "paused");
  if (acts.includes("trigger") && may.create) {
    b("trigger", "Run now", () => trigger(o).then((j) => notify(`Job ${j.metadata.name} created.`), (e) => notify(`${id}: ${e.message}`, "bad")));
  }
  if (acts.includes("suspend") && may.patch) toggle("suspend", "suspend", "unsuspend", "Suspend", "Resume", "suspended");
  if (may.delete) {
    b("delete", "Delete", () => confirmDialog(`Delete ${id}?`, /services|claims/.test(res) ? "This cannot be undone." : "Its pods are deleted with it.",
      () => api.request("DELETE", path).then(() => notify(`${id} deleted.`))), "danger");
  }
  return out.length ? h("div", { class: "actions" }, out) : null;
}
