// Unit tests of the runner's frame rules under
// Node's test runner, with a minimal stand-in for the DOM: node --test api/sdk/test/
import { test } from "node:test";
import assert from "node:assert/strict";

// The smallest DOM the Runner touches: a window that receives "message"
// events, and iframes whose contentWindow records what is posted to it.
const listeners = [];
globalThis.addEventListener = (type, fn) => type === "message" && listeners.push(fn);
globalThis.removeEventListener = (type, fn) => {
  const i = listeners.indexOf(fn);
  if (i >= 0) listeners.splice(i, 1);
};
class FakeWindow {
  constructor() { this.posted = []; }
  postMessage(frame, target) { this.posted.push({ frame: structuredClone(frame), target }); }
}
class FakeIframe {
  constructor() { this.attrs = {}; this.contentWindow = new FakeWindow(); this.onload = []; }
  setAttribute(k, v) { this.attrs[k] = v; }
  addEventListener(type, fn) { if (type === "load") this.onload.push(fn); }
  remove() { this.removed = true; }
}
globalThis.document = { createElement: () => new FakeIframe() };
const container = { appendChild() {} };
const dispatch = (source, data) => listeners.forEach((fn) => fn({ source, data }));
const tick = () => new Promise((r) => setTimeout(r, 0));

const { Runner, checkOpenURL, withRunnerCSP, challengeOf, RUNNER_CSP } = await import("../snugd-host.js");

function fakeSnugd() {
  const calls = [];
  return {
    calls,
    async net(appId, frame) {
      calls.push({ appId, frame });
      return { frame: { type: "snug:net-response", v: 1, requestId: frame.requestId, ok: true, status: 200, headers: {}, body: "{}" } };
    },
  };
}

function mounted(snugd, hooks) {
  const r = new Runner(snugd, hooks);
  const app = r.mount(container, { appId: "host-assigned", html: "<p>hi</p>" });
  return { r, app, win: app.iframe.contentWindow };
}

test("the iframe is sandboxed with allow-scripts only", () => {
  const { r, app } = mounted(fakeSnugd());
  assert.equal(app.iframe.attrs.sandbox, "allow-scripts");
  assert.ok(app.iframe.srcdoc.startsWith('<meta http-equiv="Content-Security-Policy"'));
  assert.match(RUNNER_CSP, /connect-src 'none'/);
  r.close();
});

test("frames are routed by source and the appId is the host's", async () => {
  const s = fakeSnugd();
  const { r, app, win } = mounted(s);
  const frame = { type: "snug:net-request", v: 1, requestId: "a1", instanceId: app.instanceId, url: "snug-connection://x/", method: "GET" };
  dispatch(new FakeWindow(), frame); // another window: ignored
  await tick();
  assert.equal(s.calls.length, 0);
  dispatch(win, { ...frame, appId: "forged" });
  await tick();
  assert.equal(s.calls.length, 1);
  assert.equal(s.calls[0].appId, "host-assigned");
  assert.equal(s.calls[0].frame.appId, "forged", "the frame goes to snugd as sent: snugd's strict parse refuses the forged seat");
  r.close();
});

test("one terminal answer per requestId; stale instances and duplicates get none", async () => {
  const s = fakeSnugd();
  const { r, app, win } = mounted(s);
  const frame = { type: "snug:net-request", v: 1, requestId: "dup", instanceId: app.instanceId, url: "snug-connection://x/", method: "GET" };
  dispatch(win, frame);
  dispatch(win, frame);
  dispatch(win, { ...frame, requestId: "stale", instanceId: "i-old" });
  await tick();
  await tick();
  const answers = win.posted.filter((p) => p.frame.type === "snug:net-response");
  assert.deepEqual(answers.map((p) => p.frame.requestId), ["dup"]);
  assert.equal(answers[0].target, "*");
  r.close();
});

test("another version is answered only with a plausible requestId", async () => {
  const { r, win } = mounted(fakeSnugd());
  dispatch(win, { type: "snug:app-message", v: 2, requestId: "r1" });
  dispatch(win, { type: "snug:app-message", v: 2, requestId: "" });
  dispatch(win, { type: "snug:app-message", v: 2 });
  await tick();
  const errs = win.posted.filter((p) => p.frame.type === "snug:app-response");
  assert.equal(errs.length, 1);
  assert.equal(errs[0].frame.error.code, "UNSUPPORTED_VERSION");
  r.close();
});

test("app messages and db requests get exactly one error; unknown types none", async () => {
  const { r, app, win } = mounted(fakeSnugd());
  dispatch(win, { type: "snug:app-message", v: 1, requestId: "m1", instanceId: app.instanceId, appId: "x", action: "go" });
  dispatch(win, { type: "snug:db-request", v: 1, requestId: "d1", instanceId: app.instanceId, op: "kvGet" });
  dispatch(win, { type: "snug:future-thing", v: 1, requestId: "f1" });
  await tick();
  const types = win.posted.map((p) => p.frame.type).filter((t) => t !== "snug:host-ready");
  assert.deepEqual(types, ["snug:app-response", "snug:db-response"]);
  r.close();
});

test("open-url is refused unless https without userinfo, and opened only when the hook says yes", async () => {
  const opened = [];
  globalThis.open = (url) => opened.push(url);
  let answer = false;
  const { r, app, win } = mounted(fakeSnugd(), { openUrl: async () => answer });
  const ask = (requestId, url) => dispatch(win, { type: "snug:open-url-request", v: 1, requestId, instanceId: app.instanceId, url });
  ask("o1", "http://example.com/");
  ask("o2", "https://user:pw@example.com/");
  ask("o3", "https://example.com/a");
  await tick();
  answer = true;
  ask("o4", "https://example.com/b");
  await tick();
  const res = Object.fromEntries(win.posted.filter((p) => p.frame.type === "snug:open-url-result").map((p) => [p.frame.requestId, p.frame.status]));
  assert.deepEqual(res, { o1: "refused", o2: "refused", o3: "declined", o4: "opened" });
  assert.deepEqual(opened, ["https://example.com/b"]);
  assert.equal(checkOpenURL({ type: "snug:open-url-request", v: 1, requestId: "x", instanceId: "i", url: "https://a.example/", target: "_top" }), null);
  r.close();
});

test("a connection hint is rebuilt field by field for its own app only", async () => {
  const s = fakeSnugd();
  const r = new Runner(s);
  const a = r.mount(container, { appId: "app-a", html: "" });
  const b = r.mount(container, { appId: "app-b", html: "" });
  r.hint({ event: "connection-changed", data: { appId: "app-a", slot: "mail", secret: "x".repeat(10), html: "<b>" } });
  const got = a.iframe.contentWindow.posted.map((p) => p.frame);
  assert.deepEqual(got, [{ type: "snug:host-event", v: 1, event: "connection-event", data: { slot: "mail" } }]);
  assert.equal(b.iframe.contentWindow.posted.length, 0);
  r.close();
});

test("a new announce supersedes work in flight", async () => {
  let release;
  const s = {
    calls: [],
    net(appId, frame, { signal }) {
      return new Promise((resolve, reject) => {
        release = resolve;
        signal.addEventListener("abort", () => {
          const e = new Error("cancelled");
          e.code = "ABORTED";
          reject(e);
        });
      });
    },
  };
  const { r, app, win } = mounted(s);
  dispatch(win, { type: "snug:net-request", v: 1, requestId: "slow", instanceId: app.instanceId, url: "snug-connection://x/", method: "GET" });
  await tick();
  dispatch(win, { type: "snug:app-announce", v: 1, appId: "x", displayName: "X" });
  await tick();
  const answers = win.posted.filter((p) => p.frame.type === "snug:net-response");
  assert.equal(answers.length, 1);
  assert.equal(answers[0].frame.error.code, "SUPERSEDED");
  r.close();
});

test("the pairing challenge is RFC 7636's S256", async () => {
  // RFC 7636 Appendix B.
  assert.equal(await challengeOf("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"), "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
});

test("withRunnerCSP keeps the doctype first", () => {
  assert.match(withRunnerCSP("<!doctype html><html></html>"), /^<!doctype html><meta http-equiv="Content-Security-Policy"/);
});

// A stand-in for snugd's two pairing routes, recording each request.
function fakePairingFetch(pairAnswer) {
  const requests = [];
  const fetch = async (url, init) => {
    const body = init.body ? JSON.parse(init.body) : undefined;
    requests.push({ path: new URL(url).pathname, body, headers: init.headers });
    const json = (status, v) => ({ status, ok: status < 300, text: async () => JSON.stringify(v), headers: { get: () => null } });
    if (url.endsWith("/v1/hosts/pair")) return json(200, pairAnswer);
    if (url.includes("/redeem")) return json(200, { state: "approved", token: "snugh_" + "t".repeat(43) });
    return json(404, { code: "NOT_FOUND", message: "no such route" });
  };
  return { requests, fetch };
}

test("pair sends a desktop invitation, skips the code and redeems at once", async (t) => {
  const { pair } = await import("../snugd-host.js");
  const fake = fakePairingFetch({ pairingId: "p_" + "1".repeat(32), state: "approved", invited: true, expiresAt: "2026-12-01T10:41:24.958Z" });
  t.mock.method(globalThis, "fetch", fake.fetch);
  const invitation = "snugi_" + "A".repeat(43);
  let shown = false;
  const delays = [];
  const realSetTimeout = globalThis.setTimeout;
  t.mock.method(globalThis, "setTimeout", (fn, ms) => { delays.push(ms); return realSetTimeout(fn, 0); });
  const { token } = await pair({ name: "Work laptop", surface: "desktop", invitation, onCode: () => { shown = true; } });
  assert.equal(token, "snugh_" + "t".repeat(43));
  assert.equal(shown, false, "an invited pairing has no code to show");
  assert.deepEqual(fake.requests.map((r) => r.path), ["/v1/hosts/pair", "/v1/hosts/pair/p_" + "1".repeat(32) + "/redeem"]);
  const sent = fake.requests[0].body;
  assert.equal(sent.invitation, invitation);
  assert.equal(sent.surface, "desktop");
  assert.equal(sent.origin, undefined);
  assert.deepEqual(delays, [0], "the invited pairing is redeemed without the first poll's wait");
});

test("pair refuses an invitation on the web surface before asking snugd", async (t) => {
  const { pair } = await import("../snugd-host.js");
  const fake = fakePairingFetch({});
  t.mock.method(globalThis, "fetch", fake.fetch);
  await assert.rejects(pair({ name: "page", surface: "web", origin: "https://snug.example", invitation: "snugi_" + "A".repeat(43) }), (e) => e.code === "BAD_REQUEST");
  assert.equal(fake.requests.length, 0);
});

// conformance: P1-OU4-01, P1-OU4-02, P1-OU4-03, P1-OU4-04, P1-OU4-05, P1-OU4-06
test("an open-url-request is strict: each way a frame or its url can be wrong refuses it", () => {
  const base = { type: "snug:open-url-request", v: 1, requestId: "x", instanceId: "i" };
  const ok = (url) => checkOpenURL({ ...base, url });
  assert.equal(ok("https://a.example/path?q=1"), "https://a.example/path?q=1");
  const long = "https://a.example/" + "a".repeat(2048 - "https://a.example/".length);
  assert.equal(long.length, 2048);
  assert.equal(ok(long), long, "a 2048-character url is allowed");
  const cases = {
    "an unknown key": { ...base, url: "https://a.example/", extra: 1 },
    "a target": { ...base, url: "https://a.example/", target: "_blank" },
    "window features": { ...base, url: "https://a.example/", features: "noopener" },
    "a navigation seat": { ...base, url: "https://a.example/", navigate: true },
    "an empty url": { ...base, url: "" },
    "a 2049-character url": { ...base, url: long + "a" },
    "a url that does not parse": { ...base, url: "not a url" },
    "a url that is not a string": { ...base, url: ["https://a.example/"] },
    "http:": { ...base, url: "http://a.example/" },
    "javascript:": { ...base, url: "javascript:alert(1)" },
    "data:": { ...base, url: "data:text/html,<b>x</b>" },
    "a username": { ...base, url: "https://user@a.example/" },
    "a username and password": { ...base, url: "https://user:pw@a.example/" },
    "a password alone": { ...base, url: "https://:pw@a.example/" },
  };
  for (const [what, frame] of Object.entries(cases)) {
    assert.equal(checkOpenURL(frame), null, what);
  }
});

// conformance: P1-R2-01
test("a frame of an unknown snug:* type is ignored: no answer, no error, the app goes on", async () => {
  const { r, app, win } = mounted(fakeSnugd());
  dispatch(win, { type: "snug:future", v: 1 });
  dispatch(win, { type: "snug:future-thing", v: 1, requestId: "f1", instanceId: app.instanceId });
  await tick();
  assert.deepEqual(win.posted.map((p) => p.frame.type).filter((t) => t !== "snug:host-ready"), []);
  dispatch(win, { type: "snug:app-message", v: 1, requestId: "m1", instanceId: app.instanceId, appId: "x", action: "go" });
  await tick();
  assert.deepEqual(win.posted.map((p) => p.frame.type).filter((t) => t !== "snug:host-ready"), ["snug:app-response"]);
  r.close();
});

// conformance: P1-F2-14, P1-R6-07
test("this host offers no storage: an unknown op and an artifact over 5 MiB are refused like every db-request", async () => {
  const { r, app, win } = mounted(fakeSnugd());
  dispatch(win, { type: "snug:db-request", v: 1, requestId: "d1", instanceId: app.instanceId, op: "drop" });
  dispatch(win, { type: "snug:db-request", v: 1, requestId: "d2", instanceId: app.instanceId, op: "import", artifact: "a".repeat(5 * 1024 * 1024 + 1) });
  await tick();
  const answers = win.posted.map((p) => p.frame).filter((f) => f.type === "snug:db-response");
  assert.deepEqual(answers.map((f) => [f.requestId, f.ok]), [["d1", false], ["d2", false]]);
  r.close();
});
