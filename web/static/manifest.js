// manifest.js — just enough reading of pasted YAML (or JSON) to send each
// document to the right URL. The server parses and validates the body; the
// page only needs kind, metadata.name and metadata.namespace.

// splitDocuments splits a YAML stream on "---" lines, dropping documents
// that hold only comments and blank lines.
export function splitDocuments(text) {
  const docs = [];
  let cur = [];
  for (const line of text.split(/\r?\n/)) {
    if (/^---(\s.*)?$/.test(line) || line === "...") {
      docs.push(cur.join("\n"));
      cur = [];
    } else {
      cur.push(line);
    }
  }
  docs.push(cur.join("\n"));
  return docs.filter((d) => d.split("\n").some((l) => l.trim() && !l.trim().startsWith("#")));
}

function unquote(v) {
  v = v.replace(/\s+#.*$/, "").trim();
  if ((v.startsWith('"') && v.endsWith('"')) || (v.startsWith("'") && v.endsWith("'"))) v = v.slice(1, -1);
  return v;
}

// identify returns {kind, name, namespace} of one document, reading block
// YAML's top-level kind and metadata's direct name and namespace keys, or
// a JSON object. Missing values are "".
export function identify(doc) {
  const t = doc.trim();
  if (t.startsWith("{")) {
    try {
      const o = JSON.parse(t);
      const m = o.metadata || {};
      return { kind: o.kind || "", name: m.name || "", namespace: m.namespace || "" };
    } catch {
      // Not JSON after all (YAML flow style): fall through.
    }
  }
  const out = { kind: "", name: "", namespace: "" };
  let inMeta = false;
  let metaIndent = -1;
  for (const line of doc.split("\n")) {
    if (!line.trim() || line.trim().startsWith("#")) continue;
    const indent = line.length - line.trimStart().length;
    const m = /^(\s*)([A-Za-z]+):\s*(.*)$/.exec(line);
    if (indent === 0) {
      inMeta = false;
      if (!m) continue;
      if (m[2] === "kind") out.kind = unquote(m[3]);
      if (m[2] === "metadata") { inMeta = true; metaIndent = -1; }
      continue;
    }
    if (!inMeta || !m) continue;
    if (metaIndent < 0) metaIndent = indent;
    if (indent !== metaIndent) continue;
    if (m[2] === "name") out.name = unquote(m[3]);
    if (m[2] === "namespace") out.namespace = unquote(m[3]);
  }
  return out;
}
