// snugd-host.js — the host SDK for snugd's loopback API (api/API.md).
//
// A dependency-free ES module for a host: a web page (or a desktop app's
// web view) that pairs with snugd, proposes and approves connections, runs
// Snug apps in sandboxed iframes and forwards their net frames to snugd.
// Versioned with the daemon: SDK_VERSION is the snugd release it ships
// with, and a host can compare it with the daemon's `Snugd-Version`.
//
// What it guarantees a host:
//   * frames are routed by event.source, never by a field of the frame;
//     the app's identity (appId) is the host's own assignment.
//   * every accepted requestId gets exactly one terminal answer.
//   * the app iframe is sandbox="allow-scripts" only; no credential
//     is ever posted into it (credentials go to snugd and are never read
//     back: the API is write-only for them).
//   * open-url requests are shown in full in the host's own dialog and
//     opened only after the person's click, https only, without userinfo.
//   * push hints are rebuilt field by field before they reach the app.

export const SDK_VERSION = "0.3.0";

/** The default loopback address of snugd's host API. */
export const DEFAULT_BASE = "http://127.0.0.1:4747";

/** CDN_ALLOWLIST: the only script/style sources of the runner. */
export const CDN_ALLOWLIST = Object.freeze([
  "https://cdn.jsdelivr.net",
  "https://cdnjs.cloudflare.com",
  "https://unpkg.com",
]);

/**
 * RUNNER_CSP is the Content-Security-Policy of the app runner document:
 * scripts and styles inline or from the fixed CDN allowlist, connections to
 * nothing (C2), no frames, forms or base URL of the app's own.
 */
export const RUNNER_CSP = [
  "default-src 'none'",
  "script-src 'unsafe-inline' " + CDN_ALLOWLIST.join(" "),
  "style-src 'unsafe-inline' " + CDN_ALLOWLIST.join(" "),
  "img-src data: blob:",
  "font-src data: " + CDN_ALLOWLIST.join(" "),
  "media-src data: blob:",
  "connect-src 'none'",
  "frame-src 'none'",
  "worker-src 'none'",
  "form-action 'none'",
  "base-uri 'none'",
].join("; ");

// The frame size and field limits the bridge checks before it forwards.
const MAX_FRAME_CHARS = 256 * 1024;
const MAX_NET_FRAME_BYTES = 1024 * 1024 + 64 * 1024;
const MAX_ID = 128;
const MAX_OPEN_URL = 2048;
const NET_METHODS = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"]);

/** NOT_PAIRED is the code of the refusal that says: pair again. */
export const NOT_PAIRED = "NOT_PAIRED";

/**
 * SnugdError is every failure the SDK reports: an API refusal (`code` from
 * the API's registry, `status` its HTTP status), or a local one
 * (`NETWORK_ERROR` when snugd could not be reached, `ABORTED`,
 * `PAIRING_DENIED`, `PAIRING_EXPIRED`).
 *
 * `NOT_PAIRED` (status 401) is snugd's answer to a page whose origin is not
 * paired, or no longer is (`snugd ctl hosts revoke`), or whose token is not
 * its own: the token is dead, and retrying cannot help. Forget it and pair
 * again. It is distinct from `NETWORK_ERROR`, which means snugd did not
 * answer at all (down, another port, or the browser blocked the request).
 */
export class SnugdError extends Error {
  constructor(code, message, { status = 0, retryable = false, details, retryAfter } = {}) {
    super(message);
    this.name = "SnugdError";
    this.code = code;
    this.status = status;
    this.retryable = retryable;
    if (details) this.details = details;
    if (retryAfter !== undefined) this.retryAfter = retryAfter;
  }
}

// ---------------------------------------------------------------------------
// Encoding helpers

function base64url(bytes) {
  let s = "";
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/**
 * makeVerifier returns a fresh PKCE-style verifier (32 random bytes,
 * base64url without padding: 43 characters) and its S256 challenge.
 * @returns {Promise<{verifier: string, challenge: string}>}
 */
export async function makeVerifier() {
  const raw = new Uint8Array(32);
  crypto.getRandomValues(raw);
  const verifier = base64url(raw);
  return { verifier, challenge: await challengeOf(verifier) };
}

/** challengeOf is BASE64URL(SHA256(verifier)) without padding. */
export async function challengeOf(verifier) {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier));
  return base64url(new Uint8Array(digest));
}

function seg(s) {
  return encodeURIComponent(s);
}

function sleep(ms, signal) {
  return new Promise((resolve, reject) => {
    if (signal && signal.aborted) return reject(new SnugdError("ABORTED", "cancelled"));
    const t = setTimeout(() => {
      if (signal) signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      reject(new SnugdError("ABORTED", "cancelled"));
    };
    if (signal) signal.addEventListener("abort", onAbort, { once: true });
  });
}

// ---------------------------------------------------------------------------
// HTTP

async function call(base, method, path, { token, body, signal, raw } = {}) {
  const headers = {};
  if (token) headers["Authorization"] = "Bearer " + token;
  const init = { method, headers, signal, credentials: "omit", cache: "no-store", redirect: "error" };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let res;
  try {
    res = await fetch(base + path, init);
  } catch (err) {
    if (signal && signal.aborted) throw new SnugdError("ABORTED", "cancelled");
    throw new SnugdError("NETWORK_ERROR", "snugd could not be reached at " + base, { retryable: true });
  }
  if (raw) return res;
  if (res.status === 204) return null;
  const text = await res.text();
  let data = null;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      throw new SnugdError("HOST_ERROR", "snugd answered something that is not JSON", { status: res.status });
    }
  }
  if (!res.ok) throw errorFrom(res, data);
  return data;
}

function errorFrom(res, data) {
  const e = (data && data.error) || {};
  const retryAfter = res.headers.get("Retry-After");
  return new SnugdError(e.code || "HOST_ERROR", e.message || "snugd refused the request (" + res.status + ")", {
    status: res.status,
    retryable: !!e.retryable,
    details: e.details,
    retryAfter: retryAfter ? Number(retryAfter) : undefined,
  });
}

// ---------------------------------------------------------------------------
// Pairing

/**
 * pair runs host pairing (api/API.md "Pairing a host"): it makes a verifier
 * and challenge, asks snugd to pair, hands the code to `onCode` so the host
 * can show it with the command the administrator runs, and polls redeem with
 * backoff until the pairing is approved, denied or expired.
 *
 * Where to keep the token it returns: it is the host's credential for every
 * call. A web host keeps it where only its own origin reads it
 * (IndexedDB or localStorage of the host's origin, never a cookie — snugd
 * never reads cookies — and never in a URL); a desktop host keeps it in the
 * OS keychain. Never post it into an app iframe.
 *
 * @param {object} o
 * @param {string} [o.base] snugd's address (DEFAULT_BASE)
 * @param {string} o.name the host's name as the administrator will see it
 * A desktop host can pair by **invitation** instead: the administrator runs
 * `snugd ctl hosts invite NAME` and gives the host the `snugi_…` invitation
 * it prints; the host passes it as `invitation`, under that `name`. The
 * request is then approved when recorded, in a lane no flood of pairing
 * requests from other local processes reaches: there is no code (`onCode`
 * is not called) and the token is redeemed at once. A wrong, used or
 * expired invitation throws `INVITATION_INVALID`. Keep an invitation as
 * you would the token, and only until it is used.
 *
 * @param {object} o
 * @param {string} [o.base] snugd's address (DEFAULT_BASE)
 * @param {string} o.name the host's name as the administrator will see it
 * @param {"web"|"desktop"} [o.surface] "web" (default) or "desktop"
 * @param {string} [o.origin] the page's origin (web; defaults to location.origin)
 * @param {string} [o.invitation] an administrator's invitation, `snugi_…` (desktop only)
 * @param {(p: {code: string, command: string, expiresAt: string, pairingId: string}) => void} o.onCode
 * @param {AbortSignal} [o.signal]
 * @returns {Promise<{token: string, base: string}>}
 */
export async function pair({ base = DEFAULT_BASE, name, surface = "web", origin, invitation, onCode, signal } = {}) {
  if (!name) throw new SnugdError("BAD_REQUEST", "a host name is required");
  if (invitation && surface !== "desktop") {
    throw new SnugdError("BAD_REQUEST", "an invitation pairs a desktop host only: pass surface \"desktop\"");
  }
  const { verifier, challenge } = await makeVerifier();
  const req = { name, surface, challenge };
  if (surface === "web") req.origin = origin || globalThis.location.origin;
  if (invitation) req.invitation = invitation;
  const p = await call(base, "POST", "/v1/hosts/pair", { body: req, signal });
  if (onCode && p.state !== "approved") {
    onCode({ code: p.code, command: "snugd ctl hosts approve " + p.code, expiresAt: p.expiresAt, pairingId: p.pairingId });
  }
  // An invited request is approved already: redeem at once.
  let wait = p.state === "approved" ? 0 : 1000;
  for (;;) {
    await sleep(wait, signal);
    wait = Math.min(Math.max(wait, 1000) * 1.5, 5000);
    let r;
    try {
      r = await call(base, "POST", "/v1/hosts/pair/" + seg(p.pairingId) + "/redeem", { body: { verifier }, signal });
    } catch (err) {
      if (err.code === "RATE_LIMITED") {
        wait = Math.max(wait, (err.retryAfter || 5) * 1000);
        continue;
      }
      if (err.code === "NETWORK_ERROR") continue; // snugd restarting: keep polling until expiry
      throw err;
    }
    if (r.state === "approved") return { token: r.token, base };
    if (r.state === "denied") throw new SnugdError("PAIRING_DENIED", "the administrator denied the pairing");
    if (r.state === "expired") throw new SnugdError("PAIRING_EXPIRED", "the pairing request expired before it was approved");
  }
}

// ---------------------------------------------------------------------------
// The client

/**
 * Snugd is a paired host's client of the API. Every method returns the
 * API's answer (api/API.md) or throws a SnugdError.
 */
export class Snugd {
  /**
   * @param {{base?: string, token: string}} o
   */
  constructor({ base = DEFAULT_BASE, token } = {}) {
    this.base = base;
    this.token = token;
  }

  _call(method, path, body, signal) {
    return call(this.base, method, path, { token: this.token, body, signal });
  }

  /** health answers {ok, version}. */
  health() {
    return this._call("GET", "/v1/health");
  }

  /** status answers the daemon's secret-free status. */
  status() {
    return this._call("GET", "/v1/status");
  }

  /** registry answers the pinned provider registry {entries}. */
  registry() {
    return this._call("GET", "/v1/registry");
  }

  /** connections lists an app's connections, in slot order. */
  async connections(appId) {
    return (await this._call("GET", "/v1/apps/" + seg(appId) + "/connections")).connections;
  }

  /** facts answers an app's LLM-safe connection facts. */
  async facts(appId) {
    return (await this._call("GET", "/v1/apps/" + seg(appId) + "/facts")).facts;
  }

  // Proposing (the three proposal channels)

  /** proposeUser proposes a requirement on the user channel → Proposal. */
  async proposeUser(appId, requirement) {
    const path = "/v1/apps/" + seg(appId) + "/connections/" + seg(requirement.slot);
    return (await this._call("PUT", path, { requirement })).proposal;
  }

  /**
   * proposeDirective sends an assistant directive
   * `{v: 1, kind: "connection_requirement", requirement, ...}` → Proposal.
   * `userDocs` says the user supplied the docs the model read.
   */
  async proposeDirective(appId, directive, { userDocs = false } = {}) {
    const path = "/v1/apps/" + seg(appId) + "/directives" + (userDocs ? "?userDocs=true" : "");
    return (await this._call("POST", path, directive)).proposal;
  }

  /**
   * install proposes a bundled starter's connections on the install channel
   * → [Proposal]. `html` is the app's current HTML (string or bytes); the
   * factory hash defaults to it (a fresh install).
   */
  async install(appId, { starterId, html, factorySha256 }) {
    const current = await sha256Hex(html);
    const body = { starterId, factorySha256: factorySha256 || current, currentSha256: current };
    return (await this._call("POST", "/v1/apps/" + seg(appId) + "/install", body)).proposals;
  }

  /** option proposes a registry entry's alternative flow for a row. */
  async option(appId, slot, optionId) {
    return (await this._call("POST", this._slot(appId, slot) + "/option", { optionId })).proposal;
  }

  // Review and the writers

  /** review answers what the review (or re-approval) screen shows. */
  review(appId, slot) {
    return this._call("GET", this._slot(appId, slot) + "/review");
  }

  /**
   * approve freezes a declared row. Pass the review it was shown
   * (`{review}`): its `reviewToken`, when the daemon issues one, binds the
   * approval to exactly what the person saw; a row that changed since is
   * refused (`REVIEW_STALE`) and must be reviewed again.
   */
  async approve(appId, slot, { review } = {}) {
    return (await this._call("POST", this._slot(appId, slot) + "/approve", bindBody(review))).connection;
  }

  /** reapprove freezes a staged change (pass the review shown, as approve). */
  async reapprove(appId, slot, { review } = {}) {
    return (await this._call("POST", this._slot(appId, slot) + "/reapprove", bindBody(review))).connection;
  }

  /** revoke revokes a row; its credentials are wiped in the same write. */
  async revoke(appId, slot) {
    return (await this._call("POST", this._slot(appId, slot) + "/revoke", {})).connection;
  }

  /** reconnect declares a revoked row again. */
  async reconnect(appId, slot) {
    return (await this._call("POST", this._slot(appId, slot) + "/reconnect", {})).connection;
  }

  /**
   * setCredentials stores a row's credential fields. Write-only: snugd never
   * answers them back. The host should clear its form fields afterwards.
   */
  async setCredentials(appId, slot, fields) {
    await this._call("PUT", this._slot(appId, slot) + "/credentials", { fields });
  }

  /** test runs the row's testRequest → the snug:net-response frame. */
  test(appId, slot) {
    return this._call("POST", this._slot(appId, slot) + "/test", {});
  }

  // The executor

  /**
   * net forwards one snug:net-request frame for `appId` (the host's own
   * assignment) → the snug:net-response frame. The call stays open while
   * a confirm is parked; aborting it denies that confirm.
   * `providerError` carries the Snugd-Provider-Error extract, if any.
   */
  async net(appId, frame, { delivery = "app", signal } = {}) {
    const res = await call(this.base, "POST", "/v1/net", {
      token: this.token,
      body: { appId, frame, delivery },
      signal,
      raw: true,
    });
    const text = await res.text();
    let data = null;
    try {
      data = JSON.parse(text);
    } catch {
      throw new SnugdError("HOST_ERROR", "snugd answered something that is not JSON", { status: res.status });
    }
    if (!res.ok) throw errorFrom(res, data);
    const pe = res.headers.get("Snugd-Provider-Error");
    let providerError;
    if (pe) {
      try {
        providerError = decodeURIComponent(pe);
      } catch {
        providerError = undefined;
      }
    }
    return { frame: data, providerError };
  }

  /** confirms lists the confirms waiting for a decision, oldest first. */
  async confirms() {
    return (await this._call("GET", "/v1/confirms")).confirms;
  }

  /** confirm answers one pending confirm, or throws NOT_FOUND. */
  async confirm(id) {
    return (await this._call("GET", "/v1/confirms/" + seg(id))).confirm;
  }

  /**
   * decide answers a confirm: "allow" | "deny"; remember "session" (allow
   * only) remembers the allow per (app, host, method) until restart.
   */
  async decide(id, decision, { remember } = {}) {
    const body = { decision };
    if (remember) body.remember = remember;
    await this._call("POST", "/v1/confirms/" + seg(id), body);
  }

  /** journal reads the executor's journal (metadata only), newest first. */
  journal({ appId, before, limit } = {}) {
    const q = new URLSearchParams();
    if (appId) q.set("appId", appId);
    if (before) q.set("before", String(before));
    if (limit) q.set("limit", String(limit));
    const qs = q.toString();
    return this._call("GET", "/v1/journal" + (qs ? "?" + qs : ""));
  }

  /**
   * events subscribes to the hint stream (GET /v1/events) and calls
   * `onHint({event, data})` for each hint, reconnecting with backoff until
   * `signal` aborts. Hints are references only: answer them by refetching.
   * `onState("open"|"closed")` reports the stream's state. Returns a promise
   * that resolves when the signal aborts, and rejects, without retrying,
   * with the refusal when snugd refuses the token: `NOT_PAIRED` for a web
   * page that must pair again (its host was unpaired: the open stream ends
   * and the reconnect a second later is refused), `UNAUTHORIZED` or
   * `FORBIDDEN` for a desktop host. A `NETWORK_ERROR` (snugd down) is
   * retried.
   */
  async events({ onHint, onState, signal } = {}) {
    let wait = 1000;
    while (!(signal && signal.aborted)) {
      try {
        const res = await call(this.base, "GET", "/v1/events", { token: this.token, signal, raw: true });
        if (!res.ok) {
          const text = await res.text();
          let data = null;
          try {
            data = JSON.parse(text);
          } catch {
            /* not JSON */
          }
          throw errorFrom(res, data); // 401/403 (NOT_PAIRED from a page) stop the loop below
        }
        wait = 1000;
        if (onState) onState("open");
        await readSSE(res.body, (event, data) => {
          if (event === "retry") return;
          let parsed = {};
          try {
            parsed = data ? JSON.parse(data) : {};
          } catch {
            return;
          }
          if (onHint) onHint({ event, data: parsed });
        });
      } catch (err) {
        if (signal && signal.aborted) break;
        if (err instanceof SnugdError && (err.code === NOT_PAIRED || err.status === 401 || err.status === 403)) {
          if (onState) onState("closed");
          throw err;
        }
      }
      if (onState) onState("closed");
      try {
        await sleep(wait, signal);
      } catch {
        break;
      }
      wait = Math.min(wait * 2, 15000);
    }
  }

  _slot(appId, slot) {
    return "/v1/apps/" + seg(appId) + "/connections/" + seg(slot);
  }
}

function bindBody(review) {
  if (review && typeof review.reviewToken === "string") return { reviewToken: review.reviewToken };
  return {};
}

/** sha256Hex is the lowercase hex SHA-256 of a string (UTF-8) or bytes. */
export async function sha256Hex(data) {
  const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
  const d = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return Array.from(d, (b) => b.toString(16).padStart(2, "0")).join("");
}

// readSSE parses a text/event-stream body, calling onEvent(name, data) for
// each dispatched event (comments and blank events are skipped).
async function readSSE(body, onEvent) {
  const reader = body.getReader();
  const dec = new TextDecoder();
  let buf = "";
  let event = "";
  let data = [];
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += dec.decode(value, { stream: true });
    let nl;
    while ((nl = buf.search(/\r\n|\n|\r/)) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + (buf[nl] === "\r" && buf[nl + 1] === "\n" ? 2 : 1));
      if (line === "") {
        if (data.length || event) onEvent(event || "message", data.join("\n"));
        event = "";
        data = [];
        continue;
      }
      if (line.startsWith(":")) continue;
      const i = line.indexOf(":");
      const field = i < 0 ? line : line.slice(0, i);
      let val = i < 0 ? "" : line.slice(i + 1);
      if (val.startsWith(" ")) val = val.slice(1);
      if (field === "event") event = val;
      else if (field === "data") data.push(val);
    }
  }
}

// ---------------------------------------------------------------------------
// The runner bridge

/**
 * Runner mounts Snug apps in sandboxed iframes and bridges their frames to
 * snugd. One Runner serves many apps; each mounted app is routed by its
 * iframe's contentWindow (event.source), never by a frame field.
 *
 * Hooks (all optional but `confirm`, which a host must provide for
 * mutating requests of its apps to ever go through):
 *   confirm(c) → Promise<"allow"|"deny"|"session"> — show c.host, c.method,
 *     c.url (in full), c.slot and c.bodyPreview in the host's own dialog.
 *     A runner without it denies the confirms of the apps it has mounted
 *     and leaves every other confirm to whoever decides it (another runner
 *     of the host, or the administrator), even when it listens.
 *   openUrl(url, app) → Promise<boolean> — show the full URL; resolve true
 *     only on the person's click (a user gesture), then the runner opens it.
 *   onError(err, app) — a net call that failed at the API level.
 *   onNotPaired(err) — snugd refused the host's token (its pairing ended):
 *     `NOT_PAIRED` for a web page, `UNAUTHORIZED` for a desktop host. Called
 *     once; the hint stream has stopped, and every net request of the apps
 *     is answered NOT_PAIRED (never NETWORK_ERROR). Forget the token and
 *     show "pair again".
 *   onAnnounce(app, frame) — the app described itself (display metadata).
 */
export class Runner {
  /**
   * @param {Snugd} snugd the paired client
   * @param {object} [hooks]
   */
  constructor(snugd, hooks = {}) {
    this.snugd = snugd;
    this.hooks = hooks;
    this.apps = new Map(); // contentWindow → app
    this._onMessage = (ev) => this._route(ev);
    globalThis.addEventListener("message", this._onMessage);
    this._confirming = new Set();
    this._events = null;
    this._notPaired = false;
  }

  // _refused reports whether snugd refused the host's token (NOT_PAIRED
  // for a page, UNAUTHORIZED for a desktop host: both mean pair again),
  // and tells the host once.
  _refused(err) {
    if (!(err instanceof SnugdError) || (err.code !== NOT_PAIRED && err.code !== "UNAUTHORIZED")) return false;
    if (!this._notPaired) {
      this._notPaired = true;
      if (this.hooks.onNotPaired) this.hooks.onNotPaired(err);
    }
    return true;
  }

  /**
   * mount runs one app. `appId` is the host's assignment (the app's
   * identity for snugd). Give either `src` (a URL served with RUNNER_CSP as
   * its Content-Security-Policy header — the reference host does this) or
   * `html` (the SDK puts it in srcdoc with RUNNER_CSP as a meta policy; note
   * that a srcdoc document also inherits the host page's own CSP).
   * @returns {{appId: string, iframe: HTMLIFrameElement, instanceId: string, unmount: () => void}}
   */
  mount(container, { appId, src, html, title = "Snug app", theme = "light" }) {
    if (!appId) throw new SnugdError("BAD_REQUEST", "an appId is required");
    const iframe = document.createElement("iframe");
    iframe.setAttribute("sandbox", "allow-scripts"); // C2: nothing else, ever
    iframe.setAttribute("referrerpolicy", "no-referrer");
    iframe.setAttribute("allow", "");
    iframe.title = title;
    if (src) iframe.src = src;
    else iframe.srcdoc = withRunnerCSP(html || "");
    const app = {
      appId,
      iframe,
      instanceId: newInstanceId(),
      theme,
      requestIds: new Set(), // every requestId this instance used (unique per instance)
      inflight: new Map(), // requestId → AbortController
      announced: null,
      unmount: () => this.unmount(app),
    };
    container.appendChild(iframe);
    iframe.addEventListener("load", () => {
      // On iframe load AND as announce-ack (idempotent).
      this._post(app, this._hostReady(app));
    });
    this.apps.set(iframe.contentWindow, app);
    return app;
  }

  /** unmount removes an app and cancels its calls in flight. */
  unmount(app) {
    for (const ctl of app.inflight.values()) ctl.abort("cancelled");
    app.inflight.clear();
    this.apps.delete(app.iframe.contentWindow);
    app.iframe.remove();
  }

  /** close unmounts every app and stops listening. */
  close() {
    for (const app of [...this.apps.values()]) this.unmount(app);
    globalThis.removeEventListener("message", this._onMessage);
  }

  /**
   * hint forwards a snugd hint to the apps it concerns, rebuilt field by
   * field: a `connection-changed {appId, slot}` becomes a
   * `snug:host-event` `connection-event {slot}` for that app only. Call it
   * from Snugd.events' onHint; answer `confirm-pending` with handleConfirm.
   */
  hint({ event, data }) {
    if (event === "connection-changed" && data && typeof data.appId === "string") {
      const slot = typeof data.slot === "string" ? data.slot.slice(0, 40) : undefined;
      for (const app of this.apps.values()) {
        if (app.appId !== data.appId) continue;
        const ev = { type: "snug:host-event", v: 1, event: "connection-event", data: {} };
        if (slot) ev.data.slot = slot;
        this._post(app, ev);
      }
    } else if (event === "confirm-pending" && data && typeof data.id === "string") {
      this.handleConfirm(data.id);
    }
  }

  /**
   * handleConfirm fetches a pending confirm, asks the host's confirm hook,
   * and posts the decision. A confirm already handled here is skipped.
   */
  async handleConfirm(id) {
    if (this._confirming.has(id)) return;
    this._confirming.add(id);
    try {
      let c;
      try {
        c = await this.snugd.confirm(id);
      } catch (err) {
        if (err.code === "NOT_FOUND") return; // decided already, or another host's
        throw err;
      }
      if (!this.hooks.confirm && !this._mounts(c.appId)) return; // another runner's to decide
      const answer = this.hooks.confirm ? await this.hooks.confirm(c) : "deny";
      if (answer === "session") await this.snugd.decide(id, "allow", { remember: "session" });
      else if (answer === "allow") await this.snugd.decide(id, "allow");
      else await this.snugd.decide(id, "deny");
    } catch (err) {
      if (!this._refused(err) && this.hooks.onError) this.hooks.onError(err, null);
    } finally {
      this._confirming.delete(id);
    }
  }

  // _mounts reports whether an app of this appId is mounted here.
  _mounts(appId) {
    for (const app of this.apps.values()) if (app.appId === appId) return true;
    return false;
  }

  /**
   * listen starts the hint stream for this runner (Snugd.events) and
   * returns a function that stops it. The stream ends for good on
   * NOT_PAIRED (hooks.onNotPaired); other failures go to hooks.onError.
   */
  listen({ onState } = {}) {
    const ctl = new AbortController();
    this.snugd
      .events({ onHint: (h) => this.hint(h), onState, signal: ctl.signal })
      .catch((err) => !this._refused(err) && this.hooks.onError && this.hooks.onError(err, null));
    return () => ctl.abort();
  }

  _hostReady(app) {
    return {
      type: "snug:host-ready",
      v: 1,
      instanceId: app.instanceId,
      protocolVersions: [1],
      capabilities: { streaming: false, db: false, auth: false, net: true, openUrl: true },
      theme: app.theme,
    };
  }

  _post(app, frame) {
    // Sandboxed iframes have an opaque origin: targetOrigin is necessarily
    // "*". Nothing posted here ever carries a credential.
    const w = app.iframe.contentWindow;
    if (w) w.postMessage(frame, "*");
  }

  _route(ev) {
    const app = this.apps.get(ev.source); // by source, never by a field
    if (!app) return;
    const m = ev.data;
    if (!m || typeof m !== "object" || Array.isArray(m) || typeof m.type !== "string") return;
    if (!m.type.startsWith("snug:")) return;
    if (m.v !== 1) {
      // Answer UNSUPPORTED_VERSION only when a plausible requestId exists.
      const rid = plausibleId(m.requestId);
      if (rid) this._terminalError(app, m.type, rid, "UNSUPPORTED_VERSION", "this host speaks protocol version 1");
      return;
    }
    switch (m.type) {
      case "snug:app-announce":
        this._announce(app, m);
        break;
      case "snug:net-request":
        this._net(app, m);
        break;
      case "snug:open-url-request":
        this._openUrl(app, m);
        break;
      case "snug:app-message":
        this._appMessage(app, m);
        break;
      case "snug:app-cancel":
        this._cancel(app, m);
        break;
      case "snug:db-request":
        this._db(app, m);
        break;
      default:
        // Unknown snug:* types (and app-event) are ignored.
        break;
    }
  }

  _announce(app, m) {
    // An announce from the same iframe supersedes its work in flight;
    // each such request is answered SUPERSEDED (its terminal frame).
    for (const ctl of app.inflight.values()) ctl.abort("superseded");
    app.announced = {
      displayName: typeof m.displayName === "string" ? m.displayName.slice(0, 80) : "",
      description: typeof m.description === "string" ? m.description.slice(0, 400) : "",
      iconEmoji: typeof m.iconEmoji === "string" ? m.iconEmoji.slice(0, 8) : "",
    };
    if (this.hooks.onAnnounce) this.hooks.onAnnounce(app, app.announced);
    this._post(app, this._hostReady(app));
  }

  // _accept admits a requestId once per instance and reports whether
  // it may be answered.
  _accept(app, m) {
    const rid = plausibleId(m.requestId);
    if (!rid) return null; // no plausible id, nothing on the wire
    if (m.instanceId !== app.instanceId) return null; // a stale sender
    if (app.requestIds.has(rid)) return null; // duplicate: the first one owns the terminal answer
    app.requestIds.add(rid);
    return rid;
  }

  async _net(app, m) {
    const rid = this._accept(app, m);
    if (!rid) return;
    const ctl = new AbortController();
    app.inflight.set(rid, ctl);
    let answer;
    try {
      // The frame goes to snugd as the app sent it: snugd's executor parses
      // it strictly (an exact key set) and answers every verdict as a frame.
      // The SDK adds nothing to it and never copies a credential into it.
      const frame = JSON.parse(JSON.stringify(m));
      if (JSON.stringify(frame).length > MAX_NET_FRAME_BYTES) {
        answer = netError(rid, "NET_INVALID_REQUEST", "the request frame is too large");
      } else {
        const { frame: resp } = await this.snugd.net(app.appId, frame, { signal: ctl.signal });
        answer = resp;
      }
    } catch (err) {
      if (err.code === "ABORTED" && ctl.signal.reason === "superseded") {
        answer = netError(rid, "SUPERSEDED", "the app announced itself again");
      } else if (err.code === "ABORTED") {
        answer = netError(rid, "CANCELLED", "the request was cancelled");
      } else if (err.code === "NET_INVALID_REQUEST" || err.code === "BAD_REQUEST") {
        answer = netError(rid, "NET_INVALID_REQUEST", "the request frame is not valid");
      } else if (this._refused(err)) {
        // Not retryable: nothing goes through until the host pairs again.
        answer = netError(rid, NOT_PAIRED, "this host is no longer paired with snugd; it must pair again");
      } else {
        answer = netError(rid, "NETWORK_ERROR", "the host could not reach snugd", true);
        if (this.hooks.onError) this.hooks.onError(err, app);
      }
    } finally {
      app.inflight.delete(rid);
    }
    if (this.apps.get(app.iframe.contentWindow) === app) this._post(app, answer);
  }

  async _openUrl(app, m) {
    const rid = this._accept(app, m);
    if (!rid) return;
    const result = (status, reason) => {
      const f = { type: "snug:open-url-result", v: 1, requestId: rid, status };
      if (reason) f.reason = reason.slice(0, 300);
      this._post(app, f);
    };
    const url = checkOpenURL(m);
    if (!url) return result("refused", "only an https URL without a user name or password can be opened");
    const ok = this.hooks.openUrl ? await this.hooks.openUrl(url, app) : false;
    if (!ok) return result("declined");
    // Opened in the person's browser, never inside the sandbox (C2).
    globalThis.open(url, "_blank", "noopener,noreferrer");
    result("opened");
  }

  _appMessage(app, m) {
    const rid = this._accept(app, m);
    if (!rid) return;
    // Exactly one terminal answer. This reference runner has no agent.
    this._terminalError(app, "snug:app-message", rid, "HOST_ERROR", "this host has no agent to answer app messages");
  }

  _cancel(app, m) {
    const rid = plausibleId(m.requestId);
    const ctl = rid && app.inflight.get(rid);
    if (ctl) ctl.abort("cancelled"); // the net answer (CANCELLED) is the terminal frame
  }

  _db(app, m) {
    const rid = this._accept(app, m);
    if (!rid) return;
    this._post(app, {
      type: "snug:db-response",
      v: 1,
      requestId: rid,
      ok: false,
      error: { code: "HOST_ERROR", message: "this host offers no storage" },
    });
  }

  _terminalError(app, type, rid, code, message) {
    const map = {
      "snug:app-message": "snug:app-response",
      "snug:net-request": "snug:net-response",
      "snug:db-request": "snug:db-response",
      "snug:open-url-request": "snug:open-url-result",
    };
    const t = map[type];
    if (!t) return;
    if (t === "snug:open-url-result") {
      this._post(app, { type: t, v: 1, requestId: rid, status: "refused", reason: message });
      return;
    }
    this._post(app, { type: t, v: 1, requestId: rid, ok: false, error: { code, message } });
  }
}

function netError(requestId, code, message, retryable = false) {
  return { type: "snug:net-response", v: 1, requestId, ok: false, error: { code, message, retryable } };
}

function plausibleId(x) {
  return typeof x === "string" && x.length >= 1 && x.length <= MAX_ID ? x : null;
}

function newInstanceId() {
  if (crypto.randomUUID) return "i-" + crypto.randomUUID();
  const b = new Uint8Array(16);
  crypto.getRandomValues(b);
  return "i-" + base64url(b);
}

/**
 * checkOpenURL checks an open-url-request: url 1–2048 characters,
 * parses, https:, no username or password. It returns the URL or null.
 */
export function checkOpenURL(m) {
  const keys = Object.keys(m);
  for (const k of keys) {
    if (!["type", "v", "requestId", "instanceId", "url"].includes(k)) return null; // strict frame
  }
  if (typeof m.url !== "string" || m.url.length < 1 || m.url.length > MAX_OPEN_URL) return null;
  let u;
  try {
    u = new URL(m.url);
  } catch {
    return null;
  }
  if (u.protocol !== "https:" || u.username || u.password) return null;
  return u.href;
}

/**
 * withRunnerCSP puts RUNNER_CSP in front of an app's HTML as a meta policy
 * (for srcdoc mounting). A policy of the app's own can only narrow it.
 */
export function withRunnerCSP(html) {
  const meta = '<meta http-equiv="Content-Security-Policy" content="' + RUNNER_CSP.replace(/"/g, "&quot;") + '">';
  const m = /^\s*<!doctype[^>]*>/i.exec(html);
  if (m) return m[0] + meta + html.slice(m[0].length);
  return meta + html;
}

// Exported for tests and for hosts that build their own bridge.
export const _internal = { readSSE, netError, plausibleId, MAX_FRAME_CHARS, NET_METHODS };
