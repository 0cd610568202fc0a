// host.js — the reference browser host, built only on snugd-host.js.
//
// Every string that comes from snugd, a requirement or an app is put in the
// page with textContent (never innerHTML): instructions are plain text and
// render as a numbered list, URLs are shown in full, never as links the page
// makes for them. Credential values typed into the form go to snugd and are
// cleared from the page at once; nothing reads them back.

import { Snugd, Runner, pair, SnugdError, NOT_PAIRED } from "./snugd-host.js";

const TOKEN_KEY = "snugd-reference-host/token";
const BASE_KEY = "snugd-reference-host/base";
const APPS_KEY = "snugd-reference-host/apps";

const $ = (id) => document.getElementById(id);

let client = null;
let runner = null;
let stopEvents = null;
let starters = [];
let devApp = null; // snugd webhost --app DIR: {id, title, connections}
let current = null; // {appId, starterId} or {appId, dev: true}
let mounted = null;

// UNPAIRED is what the page says when snugd refuses its token: its
// pairing was revoked (or snugd no longer knows it).
const UNPAIRED = "This page's pairing is no longer valid: pair again.";

function el(tag, props = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (k === "text") e.textContent = v;
    else if (k === "class") e.className = v;
    else if (k === "on") for (const [ev, fn] of Object.entries(v)) e.addEventListener(ev, fn);
    else if (k.startsWith("data-")) e.setAttribute(k, v);
    else e[k] = v;
  }
  for (const c of children) if (c) e.append(c);
  return e;
}

function installed() {
  try {
    return JSON.parse(localStorage.getItem(APPS_KEY) || "[]");
  } catch {
    return [];
  }
}

function remember(appId, starterId) {
  const list = installed().filter((a) => a.appId !== appId);
  list.push({ appId, starterId });
  localStorage.setItem(APPS_KEY, JSON.stringify(list));
}

function say(node, err) {
  node.textContent = err instanceof SnugdError ? err.message + " (" + err.code + ")" : String(err && err.message ? err.message : err);
}

async function start() {
  starters = await (await fetch("starters.json", { cache: "no-store" })).json();
  const dev = await fetch("dev/app.json", { cache: "no-store" });
  if (dev.ok) devApp = await dev.json();
  const token = localStorage.getItem(TOKEN_KEY);
  const base = localStorage.getItem(BASE_KEY) || "http://127.0.0.1:4747";
  $("pair-base").value = base;
  if (!token) return showPairing();
  client = new Snugd({ base, token });
  try {
    await client.status();
  } catch (err) {
    if (err.code === NOT_PAIRED || err.status === 401 || err.status === 403) return unpaired();
    // NETWORK_ERROR: snugd is down or elsewhere; the token may still be good.
    $("daemon").textContent = "snugd could not be reached at " + base + ": is snugd run running?";
    return showPairing();
  }
  paired();
}

// unpaired forgets the token snugd refused, stops everything that used
// it and asks for a new pairing.
function unpaired() {
  localStorage.removeItem(TOKEN_KEY);
  if (stopEvents) stopEvents();
  stopEvents = null;
  if (runner) runner.close();
  runner = null;
  mounted = null;
  $("runner").replaceChildren();
  $("daemon").textContent = "snugd: not paired";
  document.body.setAttribute("data-paired", "false");
  showPairing(UNPAIRED);
}

function showPairing(note) {
  $("pairing").hidden = false;
  $("apps").hidden = true;
  $("detail").hidden = true;
  if (note) $("pair-error").textContent = note;
}

$("pair-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  $("pair-error").textContent = "";
  $("pair-start").disabled = true;
  const base = $("pair-base").value.trim().replace(/\/+$/, "");
  try {
    const { token } = await pair({
      base,
      name: $("pair-name").value.trim(),
      surface: "web",
      onCode: ({ code, command, expiresAt }) => {
        $("pair-code").hidden = false;
        $("pair-command").textContent = command;
        $("pair-code-text").textContent = code;
        $("pair-expires").textContent = new Date(expiresAt).toLocaleTimeString();
      },
    });
    // The token is this page's credential for snugd. It stays in this
    // origin's storage and is never posted into an app.
    localStorage.setItem(TOKEN_KEY, token);
    localStorage.setItem(BASE_KEY, base);
    client = new Snugd({ base, token });
    $("pair-code").hidden = true;
    paired();
  } catch (err) {
    say($("pair-error"), err);
  } finally {
    $("pair-start").disabled = false;
  }
});

$("unpair").addEventListener("click", () => {
  localStorage.removeItem(TOKEN_KEY);
  location.reload();
});

async function paired() {
  $("pairing").hidden = true;
  $("apps").hidden = false;
  try {
    const h = await client.health();
    $("daemon").textContent = "snugd " + h.version + " at " + client.base;
  } catch (err) {
    $("daemon").textContent = "snugd: " + err.message;
  }
  document.body.setAttribute("data-paired", "true");
  runner = new Runner(client, {
    confirm: askConfirm,
    openUrl: askOpen,
    onError: (err) => console.warn("snugd:", err.code),
    // The hint stream ends on NOT_PAIRED a second after a revoke.
    onNotPaired: unpaired,
  });
  stopEvents = runner.listen({
    onState: (s) => document.body.setAttribute("data-events", s),
  });
  // A hint may concern the screen too: refetch what is shown.
  const origHint = runner.hint.bind(runner);
  runner.hint = (h) => {
    origHint(h);
    if (h.event === "connection-changed" && current && h.data.appId === current.appId) showDetail(current);
  };
  renderApps();
}

function renderApps() {
  const list = $("app-list");
  list.replaceChildren();
  if (devApp) {
    const appId = devApp.id;
    list.append(
      el(
        "li",
        { "data-testid": "app-dev" },
        el("strong", { text: devApp.title + " (your app)" }),
        el("span", { class: "muted", text: appId }),
        el("button", { text: "Open", "data-testid": "open-dev", on: { click: () => openDevApp() } }),
      ),
    );
  }
  const mine = new Map(installed().map((a) => [a.starterId, a]));
  for (const s of starters) {
    const appId = "starter-" + s.id;
    const inst = mine.get(s.id);
    list.append(
      el(
        "li",
        { "data-testid": "app-" + s.id },
        el("strong", { text: s.title }),
        el("span", { class: "muted", text: appId }),
        inst
          ? el("button", { text: "Open", "data-testid": "open-" + s.id, on: { click: () => showDetail({ appId, starterId: s.id }) } })
          : el("button", { text: "Install", "data-testid": "install-" + s.id, on: { click: () => installStarter(s) } }),
      ),
    );
  }
}

// openDevApp proposes the connections of the app served by snugd webhost
// --app (user channel: each is declared, or staged for re-approval when it
// changed) and shows them for review. Its directory is read again each time.
async function openDevApp() {
  try {
    const res = await fetch("dev/app.json", { cache: "no-store" });
    if (!res.ok) throw new Error(await res.text());
    devApp = await res.json();
    const have = new Map((await client.connections(devApp.id)).map((c) => [c.slot, c]));
    for (const requirement of devApp.connections) {
      const c = have.get(requirement.slot);
      if (c && canonical(c.requirement) === canonical(requirement)) continue; // unchanged
      if (c && c.status === "revoked") continue; // the person reconnects it
      await client.proposeUser(devApp.id, requirement);
    }
    showDetail({ appId: devApp.id, dev: true });
  } catch (err) {
    alert("Your app: " + (err.message || err));
  }
}

// canonical is JSON with every object's keys sorted: the same requirement
// compares equal however its file orders them.
function canonical(v) {
  if (Array.isArray(v)) return "[" + v.map(canonical).join(",") + "]";
  if (v && typeof v === "object") return "{" + Object.keys(v).sort().map((k) => JSON.stringify(k) + ":" + canonical(v[k])).join(",") + "}";
  return JSON.stringify(v);
}

async function installStarter(s) {
  const appId = "starter-" + s.id;
  try {
    const html = await (await fetch("starters/" + encodeURIComponent(s.id) + "/index.html", { cache: "no-store" })).text();
    await client.install(appId, { starterId: s.id, html });
    remember(appId, s.id);
    renderApps();
    showDetail({ appId, starterId: s.id });
  } catch (err) {
    alert("Install failed: " + (err.message || err));
  }
}

async function showDetail(app) {
  current = app;
  $("detail").hidden = false;
  $("detail-title").textContent = app.appId;
  const box = $("connections");
  let conns;
  try {
    conns = await client.connections(app.appId);
  } catch (err) {
    box.replaceChildren(el("p", { class: "error", text: err.message }));
    return;
  }
  box.replaceChildren();
  let ready = conns.length > 0 || !!app.dev;
  for (const c of conns) {
    box.append(await connectionCard(app, c));
    const st = c.state && c.state.status;
    if (c.status !== "approved" || st !== "connected") ready = false;
  }
  const run = el("button", { text: mounted && mounted.appId === app.appId ? "Restart app" : "Run app", "data-testid": "run-app", class: ready ? "primary" : "" });
  run.disabled = !ready;
  run.addEventListener("click", () => runApp(app));
  box.append(el("p", {}, run, ready ? null : el("span", { class: "muted", text: "  Approve and connect every connection to run the app." })));
}

async function connectionCard(app, c) {
  const card = el("div", { class: "conn", "data-testid": "conn-" + c.slot });
  const st = (c.state && c.state.status) || "no credentials";
  card.append(
    el(
      "h3",
      {},
      el("span", { text: c.requirement.provider.name + " — " + c.slot + " " }),
      el("span", { class: "badge " + c.status, text: c.status, "data-testid": "status-" + c.slot }),
      el("span", { class: "badge", text: st, "data-testid": "state-" + c.slot }),
    ),
  );
  if (c.status === "declared" || c.needsReapproval) {
    card.append(await reviewBlock(app, c));
  } else if (c.status === "approved") {
    card.append(el("p", { class: "muted", text: "Reaches: " + c.allowedHosts.join(", ") }));
    card.append(credentialForm(app, c));
    card.append(el("button", { text: "Revoke", on: { click: async () => { await client.revoke(app.appId, c.slot); showDetail(app); } } }));
  } else if (c.status === "revoked") {
    card.append(el("button", { text: "Reconnect", on: { click: async () => { await client.reconnect(app.appId, c.slot); showDetail(app); } } }));
  }
  return card;
}

async function reviewBlock(app, c) {
  const r = await client.review(app.appId, c.slot);
  const box = el("div", { "data-testid": "review-" + c.slot });
  if (r.borrowed && r.disclosure) box.append(el("p", { class: "muted", text: r.disclosure, "data-testid": "disclosure" }));
  const hosts = r.pendingHosts || r.hosts || [];
  box.append(el("p", {}, el("strong", { text: "Approving lets this app reach: " }), el("span", { text: hosts.join(", "), "data-testid": "review-hosts" })));
  if (r.scopes && r.scopes.length) box.append(el("p", { text: "Scopes: " + r.scopes.join(" ") }));
  if (r.instructions && r.instructions.length) {
    const ol = el("ol", { "data-testid": "instructions" });
    for (const step of r.instructions) ol.append(el("li", { text: step })); // plain text, never HTML
    box.append(ol);
  }
  if (r.consoleUrl) {
    box.append(el("p", {}, el("span", { text: "Provider console: " }), el("code", { text: r.consoleUrl }), el("span", { class: "muted", text: " (host " + r.consoleHost + ")" })));
  }
  if (r.diff && r.diff.length) {
    const t = el("table", { class: "diff", "data-testid": "diff" }, el("tr", {}, el("th", { text: "field" }), el("th", { text: "now" }), el("th", { text: "after approval" })));
    for (const d of r.diff) t.append(el("tr", {}, el("td", { text: d.path }), el("td", { text: JSON.stringify(d.old) }), el("td", { text: JSON.stringify(d.new) })));
    box.append(t);
  }
  const approve = el("button", { class: "primary", text: c.needsReapproval ? "Approve the change" : "Approve", "data-testid": "approve-" + c.slot });
  approve.addEventListener("click", async () => {
    approve.disabled = true;
    try {
      if (c.needsReapproval) await client.reapprove(app.appId, c.slot, { review: r });
      else await client.approve(app.appId, c.slot, { review: r });
    } catch (err) {
      alert(err.code === "REVIEW_STALE" ? "The connection changed since this review: look again." : err.message);
    }
    showDetail(app);
  });
  box.append(approve);
  return box;
}

function credentialForm(app, c) {
  const fields = c.requirement.fields || [];
  const form = el("form", { autocomplete: "off", "data-testid": "cred-form-" + c.slot });
  for (const f of fields) {
    const input = el("input", { name: f.key, type: f.type === "secret" ? "password" : "text", placeholder: f.placeholder || "", "data-testid": "cred-" + c.slot + "-" + f.key });
    input.autocomplete = "off";
    input.spellcheck = false;
    form.append(el("label", {}, el("span", { text: f.label + (f.required ? " (required) " : " ") }), input));
    if (f.description) form.append(el("p", { class: "muted", text: f.description }));
  }
  const msg = el("span", { "data-testid": "cred-msg-" + c.slot });
  form.append(el("button", { type: "submit", text: "Save credentials", "data-testid": "cred-save-" + c.slot }), msg);
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const values = {};
    for (const input of form.querySelectorAll("input")) {
      if (input.value !== "") values[input.name] = input.value;
      input.value = ""; // never kept in the page
    }
    try {
      await client.setCredentials(app.appId, c.slot, values);
      msg.className = "ok";
      msg.textContent = " Saved.";
    } catch (err) {
      msg.className = "error";
      say(msg, err);
    }
    showDetail(app);
  });
  return form;
}

function runApp(app) {
  if (mounted) mounted.unmount();
  const box = $("runner");
  box.replaceChildren();
  // The runner document is served by snugd webhost with RUNNER_CSP and a
  // sandbox of its own; the iframe adds sandbox="allow-scripts" and nothing else.
  const src = app.dev ? "dev/run" : "run/" + encodeURIComponent(app.starterId);
  mounted = runner.mount(box, { appId: app.appId, src, title: app.appId });
  showDetail(app);
}

function askConfirm(c) {
  const d = $("confirm-dialog");
  $("confirm-app").textContent = c.appId;
  $("confirm-slot").textContent = c.slot || "(none)";
  $("confirm-method").textContent = c.method;
  $("confirm-host").textContent = c.host;
  $("confirm-url").textContent = c.url;
  $("confirm-body").textContent = c.bodyPreview || "";
  $("confirm-body-box").hidden = !c.bodyPreview;
  $("confirm-expires").textContent = new Date(c.expiresAt).toLocaleTimeString();
  return new Promise((resolve) => {
    d.returnValue = "deny";
    d.addEventListener("close", () => resolve(d.returnValue === "allow" || d.returnValue === "session" ? d.returnValue : "deny"), { once: true });
    d.showModal();
  });
}

function askOpen(url, app) {
  const d = $("open-dialog");
  $("open-app").textContent = app.appId;
  $("open-url").textContent = url; // in full
  return new Promise((resolve) => {
    d.returnValue = "no";
    d.addEventListener("close", () => resolve(d.returnValue === "yes"), { once: true });
    d.showModal();
  });
}

window.addEventListener("pagehide", () => stopEvents && stopEvents());
start().catch((err) => {
  $("daemon").textContent = "error: " + (err.message || err);
});
