// Demo page: POST the text to /correct and show the corrected text with every edit highlighted.
// Positions from the API count Unicode code points, so texts are split with Array.from (not UTF-16 units).
"use strict";

const $ = (id) => document.getElementById(id);

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  for (const c of children) node.append(c);
  return node;
}

function showError(message) {
  $("error").textContent = message;
  $("error").hidden = false;
}

function render(result) {
  const chars = Array.from(result.target);
  const byPosition = new Map(result.edits.map((e) => [e.position, e]));
  const out = $("output");
  out.replaceChildren();
  let plain = "";
  chars.forEach((ch, i) => {
    const e = byPosition.get(i);
    if (!e) { plain += ch; return; }
    if (plain) { out.append(plain); plain = ""; }
    const title = `${e.source} → ${e.target} · confidence ${e.confidence.toFixed(2)} · ${e.reason}`;
    out.append(el("mark", { class: "edit", title, "data-source": e.source, "data-position": String(i) }, ch));
  });
  if (plain) out.append(plain);

  const body = $("edits").querySelector("tbody");
  body.replaceChildren();
  result.edits.forEach((e, n) => {
    body.append(el("tr", {},
      el("td", {}, String(n + 1)), el("td", {}, String(e.position)),
      el("td", {}, el("del", {}, e.source), " → ", el("ins", {}, e.target)),
      el("td", {}, e.confidence.toFixed(3)), el("td", {}, e.reason)));
  });
  $("edits").hidden = result.edits.length === 0;
  $("summary").textContent = result.edits.length ? `(${result.edits.length} edit${result.edits.length > 1 ? "s" : ""})` : "(no errors found)";
  $("result").hidden = false;
}

function describe(detail) {
  // the page sends one text: the API's "text 0" is "the text" to the person reading it
  if (typeof detail === "string") return detail.replace(/^text 0 /, "the text ");
  if (Array.isArray(detail)) return detail.map((d) => d.msg).join("; ");
  return JSON.stringify(detail);
}

async function correct(event) {
  if (event) event.preventDefault();
  const text = $("input").value;
  const payload = { text };
  const threshold = $("threshold").value.trim();
  if (threshold !== "") payload.threshold = Number(threshold);
  const protect = $("protect").value.split(/[\s,，、]+/).filter(Boolean);
  if (protect.length) payload.protect = protect;

  $("error").hidden = true;
  $("result").hidden = true;  // an earlier answer never stands beside a new error
  $("correct").disabled = true;
  try {
    const headers = { "Content-Type": "application/json" };
    const key = $("key").value.trim();
    if (key) headers["X-API-Key"] = key;
    const response = await fetch("/correct", { method: "POST", headers, body: JSON.stringify(payload) });
    const data = await response.json().catch(() => ({ detail: response.statusText }));
    if (response.status === 401) $("key-label").hidden = false;  // this server wants a key: ask for it
    if (!response.ok) { showError(`Error ${response.status}: ${describe(data.detail)}`); return; }
    render(data.results[0]);
  } catch (err) {
    showError(`Request failed: ${err}`);
  } finally {
    $("correct").disabled = false;
  }
}

async function showModel() {
  try {
    const r = await fetch("/ready");
    const d = await r.json();
    $("model").textContent = r.ok ? `model ${d.model} · ${d.version} · ${d.provider}` : "model not loaded yet";
  } catch (err) {
    $("model").textContent = "service unreachable";
  }
}

$("form").addEventListener("submit", correct);
$("input").addEventListener("keydown", (e) => { if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) correct(e); });
showModel();
