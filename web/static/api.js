// api.js — the admin token, requests, and live collections fed by the
// watch API. The token lives in sessionStorage (this tab only) and travels
// only in the Authorization header: never in a URL, never logged.

const TOKEN_KEY = "skiff.token";

export function token() { return sessionStorage.getItem(TOKEN_KEY) || ""; }
export function setToken(t) { sessionStorage.setItem(TOKEN_KEY, t); }
export function clearToken() { sessionStorage.removeItem(TOKEN_KEY); }

// onUnauthorized is called when the server refuses the token (401).
let onUnauthorized = () => {};
export function setUnauthorizedHandler(fn) { onUnauthorized = fn; }

// ApiError carries the server's Status: message, reason, code and the
// field-level causes of a validation error.
export class ApiError extends Error {
  constructor(status, httpCode) {
    super(status.message || `HTTP ${httpCode}`);
    this.code = status.code || httpCode;
    this.reason = status.reason || "";
    this.causes = (status.details && status.details.causes) || [];
  }
}

async function errorFrom(res) {
  let st = {};
  const text = await res.text().catch(() => "");
  try { st = JSON.parse(text); } catch { st = { message: text.trim() || res.statusText }; }
  if (res.status === 401) onUnauthorized();
  return new ApiError(st, res.status);
}

// request sends one API call with the token. body may be an object (sent
// as JSON) or a string (sent with the given contentType). It resolves to
// the decoded JSON answer, or rejects with an ApiError.
export async function request(method, path, { body, contentType, signal, raw } = {}) {
  const headers = { Authorization: "Bearer " + token(), Accept: "application/json" };
  let payload;
  if (body !== undefined) {
    if (typeof body === "string") {
      payload = body;
      headers["Content-Type"] = contentType || "application/yaml";
    } else {
      payload = JSON.stringify(body);
      headers["Content-Type"] = contentType || "application/json";
    }
  }
  const res = await fetch(path, { method, headers, body: payload, signal, cache: "no-store" });
  if (!res.ok) throw await errorFrom(res);
  if (raw) return res;
  const text = await res.text();
  return text ? JSON.parse(text) : null;
}

export const get = (path, opts) => request("GET", path, opts);
export const mergePatch = (path, body) => request("PATCH", path, { body, contentType: "application/merge-patch+json" });

// Connection state, shared by every collection: "connecting", "live" or
// "lost". Listeners hear every change.
const conn = { state: "connecting", listeners: new Set(), broken: new Set() };
export function connectionState() { return conn.state; }
export function onConnection(fn) { conn.listeners.add(fn); return () => conn.listeners.delete(fn); }
function setBroken(c, broken) {
  if (broken) conn.broken.add(c); else conn.broken.delete(c);
  const next = conn.broken.size ? "lost" : "live";
  if (next !== conn.state) {
    conn.state = next;
    conn.listeners.forEach((fn) => fn(next));
  }
}

// How long a watch may stay silent before it counts as dead: the server
// sends a keep-alive every 10 s, so this is three of them missed.
const SILENCE_MS = 35000;
const MAX_BACKOFF_MS = 15000;

// Collection is a live, client-side copy of a list: it lists once, then
// follows the watch stream from the list's resourceVersion, resuming after
// the last one seen when the stream breaks (relisting on 410 Gone). It
// reconnects by itself with backoff; no polling. Subscribers are called
// (at most once per animation frame) after every change. A 403 or 404
// stops it for good, with the ApiError in error (the token may not list
// the kind, or the server does not serve it). keep, when given, maps each
// object to what is kept of it (a Secret list keeps no values).
export class Collection {
  constructor(path, fieldSelector = "", keep = (o) => o) {
    this.path = path;
    this.fieldSelector = fieldSelector;
    this.keep = keep;
    this.error = null;
    this.items = new Map(); // key "ns/name" → object
    this.loaded = false;
    this.listeners = new Set();
    this.rv = "";
    this.stopped = false;
    this.backoff = 1000;
    this.abort = null;
    this.pending = false;
    this.retry = null;
    this.run();
  }

  subscribe(fn) { this.listeners.add(fn); return () => this.listeners.delete(fn); }

  list() { return [...this.items.values()]; }

  stop() {
    this.stopped = true;
    clearTimeout(this.retry);
    if (this.abort) this.abort.abort();
    setBroken(this, false);
  }

  // reconnect cuts short a wait for the next attempt (the browser came back
  // online).
  reconnect() {
    if (this.stopped || !this.retry) return;
    clearTimeout(this.retry);
    this.retry = null;
    this.backoff = 1000;
    this.run();
  }

  notify() {
    if (this.pending) return;
    this.pending = true;
    requestAnimationFrame(() => {
      this.pending = false;
      this.listeners.forEach((fn) => fn(this));
    });
  }

  query(extra) {
    const q = new URLSearchParams(extra);
    if (this.fieldSelector) q.set("fieldSelector", this.fieldSelector);
    return this.path + "?" + q.toString();
  }

  async run() {
    this.retry = null;
    while (!this.stopped) {
      try {
        if (!this.rv) await this.relist();
        await this.watch();
      } catch (err) {
        if (this.stopped) return;
        if (err instanceof ApiError && [401, 403, 404].includes(err.code)) { this.error = err; this.stop(); this.loaded = true; this.notify(); return; }
        if (err instanceof ApiError && err.code === 410) { this.rv = ""; continue; }
        setBroken(this, true);
        this.retry = setTimeout(() => this.run(), this.backoff);
        this.backoff = Math.min(this.backoff * 2, MAX_BACKOFF_MS);
        return;
      }
    }
  }

  async relist() {
    const list = await get(this.query({}));
    this.items = new Map((list.items || []).map((o) => [key(o), this.keep(o)]));
    this.rv = list.metadata.resourceVersion;
    this.loaded = true;
    this.notify();
  }

  // watch follows the stream until it ends, throwing when it breaks.
  async watch() {
    const ac = new AbortController();
    this.abort = ac;
    let timer = setTimeout(() => ac.abort(), SILENCE_MS);
    const res = await request("GET", this.query({ watch: "true", resourceVersion: this.rv, allowWatchBookmarks: "true" }), { signal: ac.signal, raw: true });
    setBroken(this, false);
    this.backoff = 1000;
    const reader = res.body.getReader();
    const dec = new TextDecoder();
    let buf = "";
    try {
      for (;;) {
        const { done, value } = await reader.read();
        clearTimeout(timer);
        if (done) break;
        timer = setTimeout(() => ac.abort(), SILENCE_MS);
        buf += dec.decode(value, { stream: true });
        let nl;
        while ((nl = buf.indexOf("\n")) >= 0) {
          const line = buf.slice(0, nl).trim();
          buf = buf.slice(nl + 1);
          if (line) this.apply(JSON.parse(line));
        }
      }
    } finally {
      clearTimeout(timer);
    }
    if (!this.stopped) throw new Error("watch stream ended");
  }

  apply(ev) {
    const o = ev.object || {};
    if (ev.type === "ERROR") throw new ApiError(o, o.code || 500);
    if (o.metadata && o.metadata.resourceVersion) this.rv = o.metadata.resourceVersion;
    if (ev.type === "BOOKMARK") return;
    if (ev.type === "DELETED") this.items.delete(key(o));
    else this.items.set(key(o), this.keep(o));
    this.notify();
  }
}

// StaticCollection stands in for a Collection the token may not list: a
// fixed set of objects (maybe none), loaded from the start.
export class StaticCollection {
  constructor(objects = []) {
    this.items = new Map(objects.map((o) => [key(o), o]));
    this.loaded = true;
  }
  subscribe() { return () => {}; }
  list() { return [...this.items.values()]; }
  stop() {}
  reconnect() {}
}

// whoami answers who the token is (SelfSubjectReview): username, groups.
// A token the server refuses rejects with a 401 ApiError.
export async function whoami() {
  const r = await request("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
    { body: { apiVersion: "authentication.k8s.io/v1", kind: "SelfSubjectReview" } });
  return (r.status && r.status.userInfo) || {};
}

// can asks whether the token may do verb on resource (a
// SelfSubjectAccessReview, as kubectl auth can-i). It is only a hint for
// what to show: the server decides every request anyway.
export async function can(verb, resource, { group = "", namespace = "", subresource = "" } = {}) {
  try {
    const r = await request("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", {
      body: { apiVersion: "authorization.k8s.io/v1", kind: "SelfSubjectAccessReview",
        spec: { resourceAttributes: { verb, resource, group, namespace, subresource } } },
    });
    return !!(r.status && r.status.allowed);
  } catch {
    return false;
  }
}

// permissions works out, once per login, what the dashboard may show and
// offer: which collections to watch (cluster-wide, or for a service
// account bound in one namespace, that namespace) and which actions.
export async function permissions() {
  const me = await whoami();
  const groups = me.groups || [];
  const sa = /^system:serviceaccount:([^:]+):/.exec(me.username || "");
  const admin = groups.includes("system:masters");
  let ns = "";
  if (!admin && sa && !(await can("list", "pods"))) ns = sa[1];
  const q = (verb, resource, group = "", subresource = "", scoped = true) =>
    can(verb, resource, { group, subresource, namespace: scoped ? ns : "" });
  const checks = {
    listNodes: q("watch", "nodes", "", "", false),
    listNamespaces: q("watch", "namespaces", "", "", false),
    listPods: q("watch", "pods"),
    listDeployments: q("watch", "deployments", "apps"),
    listDaemonSets: q("watch", "daemonsets", "apps"),
    deletePods: q("delete", "pods"),
    deleteDeployments: q("delete", "deployments", "apps"),
    deleteDaemonSets: q("delete", "daemonsets", "apps"),
    scaleDeployments: q("patch", "deployments", "apps", "scale"),
    patchNodes: q("patch", "nodes", "", "", false),
    deleteNodes: q("delete", "nodes", "", "", false),
    apply: q("create", "deployments", "apps"),
    readLogs: q("get", "pods", "", "log"),
    readEvents: q("list", "events"),
  };
  const perms = { user: me.username || "", admin, ns };
  await Promise.all(Object.entries(checks).map(async ([k, p]) => { perms[k] = admin || (await p); }));
  return perms;
}

export function key(o) { return (o.metadata.namespace || "") + "/" + o.metadata.name; }

// Resource paths by kind, for objects pasted as YAML.
const KINDS = {
  Pod: ["/api/v1", "pods", true],
  Secret: ["/api/v1", "secrets", true],
  ConfigMap: ["/api/v1", "configmaps", true],
  Event: ["/api/v1", "events", true],
  Namespace: ["/api/v1", "namespaces", false],
  Node: ["/api/v1", "nodes", false],
  Deployment: ["/apis/apps/v1", "deployments", true],
  DaemonSet: ["/apis/apps/v1", "daemonsets", true],
};

// objectPath returns the collection path of kind (in ns when namespaced)
// and the object's path when name is given; null for an unknown kind.
export function objectPath(kind, ns, name) {
  const k = KINDS[kind];
  if (!k) return null;
  const [base, res, namespaced] = k;
  const coll = namespaced ? `${base}/namespaces/${enc(ns || "default")}/${res}` : `${base}/${res}`;
  return { collection: coll, object: name ? `${coll}/${enc(name)}` : "" };
}

export const enc = encodeURIComponent;
