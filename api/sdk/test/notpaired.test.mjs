// NOT_PAIRED in the SDK: snugd's refusal of a page whose pairing ended is
// its own code (never NETWORK_ERROR), ends the hint stream without a retry,
// reaches the host once through onNotPaired, and answers the apps a clear
// code. node --test api/sdk/test/
import { test } from "node:test";
import assert from "node:assert/strict";

const listeners = [];
globalThis.addEventListener = (type, fn) => type === "message" && listeners.push(fn);
globalThis.removeEventListener = (type, fn) => {
  const i = listeners.indexOf(fn);
  if (i >= 0) listeners.splice(i, 1);
};
class FakeWindow {
  constructor() { this.posted = []; }
  postMessage(frame) { this.posted.push(structuredClone(frame)); }
}
class FakeIframe {
  constructor() { this.contentWindow = new FakeWindow(); }
  setAttribute() {}
  addEventListener() {}
  remove() {}
}
globalThis.document = { createElement: () => new FakeIframe() };
const dispatch = (source, data) => listeners.forEach((fn) => fn({ source, data }));
const until = async (cond) => {
  for (let i = 0; i < 200 && !cond(); i++) await new Promise((r) => setTimeout(r, 5));
};

const { Snugd, Runner, SnugdError, NOT_PAIRED } = await import("../snugd-host.js");

// The exact answer snugd gives such a page (api/API.md, "A page that is not paired").
const notPaired = () =>
  new Response(JSON.stringify({ error: { code: "NOT_PAIRED", message: "this origin is not paired with snugd: pair again", retryable: false } }), {
    status: 401,
    headers: { "Content-Type": "application/json", "WWW-Authenticate": 'Bearer realm="snugd"' },
  });

test("a refused token is NOT_PAIRED, and snugd down is NETWORK_ERROR", async (t) => {
  const s = new Snugd({ token: "snugh_old" });
  t.mock.method(globalThis, "fetch", async () => notPaired());
  await assert.rejects(s.status(), (e) => e instanceof SnugdError && e.code === NOT_PAIRED && e.status === 401 && !e.retryable);
  t.mock.method(globalThis, "fetch", async () => { throw new TypeError("Failed to fetch"); });
  await assert.rejects(s.status(), (e) => e.code === "NETWORK_ERROR" && e.retryable);
});

test("the hint stream ends on NOT_PAIRED without a retry", async (t) => {
  let calls = 0;
  t.mock.method(globalThis, "fetch", async () => {
    calls++;
    if (calls === 1) {
      // An open stream that snugd ends when the host is unpaired.
      const body = new ReadableStream({
        start(c) {
          c.enqueue(new TextEncoder().encode('event: connection-changed\ndata: {"appId":"a","slot":"s"}\n\n'));
          c.close();
        },
      });
      return new Response(body, { status: 200, headers: { "Content-Type": "text/event-stream" } });
    }
    return notPaired();
  });
  const realSetTimeout = globalThis.setTimeout;
  t.mock.method(globalThis, "setTimeout", (fn) => realSetTimeout(fn, 0));
  const states = [];
  const hints = [];
  const s = new Snugd({ token: "snugh_old" });
  await assert.rejects(
    s.events({ onHint: (h) => hints.push(h), onState: (st) => states.push(st) }),
    (e) => e.code === NOT_PAIRED,
  );
  assert.equal(calls, 2, "one reconnect, refused, and no more");
  assert.equal(hints.length, 1);
  assert.deepEqual(states, ["open", "closed", "closed"]);
});

test("a network error keeps the stream retrying", async (t) => {
  let calls = 0;
  const ctl = new AbortController();
  t.mock.method(globalThis, "fetch", async () => {
    if (++calls === 3) ctl.abort();
    throw new TypeError("Failed to fetch");
  });
  const realSetTimeout = globalThis.setTimeout;
  t.mock.method(globalThis, "setTimeout", (fn) => realSetTimeout(fn, 0));
  await new Snugd({ token: "t" }).events({ signal: ctl.signal });
  assert.equal(calls, 3);
});

test("the runner tells the host once and answers its apps NOT_PAIRED", async (t) => {
  t.mock.method(globalThis, "fetch", async () => notPaired());
  const told = [];
  const errors = [];
  const r = new Runner(new Snugd({ token: "snugh_old" }), { onNotPaired: (e) => told.push(e.code), onError: (e) => errors.push(e.code) });
  const app = r.mount({ appendChild() {} }, { appId: "mine", html: "<p>hi</p>" });
  const win = app.iframe.contentWindow;
  r.listen();
  for (const rid of ["r1", "r2"]) {
    dispatch(win, { type: "snug:net-request", v: 1, requestId: rid, instanceId: app.instanceId, url: "snug-connection://x/", method: "GET" });
  }
  await until(() => win.posted.filter((f) => f.type === "snug:net-response").length === 2);
  const answers = win.posted.filter((f) => f.type === "snug:net-response");
  assert.equal(answers.length, 2);
  for (const a of answers) {
    assert.equal(a.ok, false);
    assert.equal(a.error.code, "NOT_PAIRED");
    assert.equal(a.error.retryable, false);
    assert.doesNotMatch(JSON.stringify(a), /snugh_/, "no token in what the app sees");
  }
  await until(() => told.length > 0);
  assert.deepEqual(told, ["NOT_PAIRED"], "onNotPaired once, for the stream and both requests");
  assert.deepEqual(errors, [], "NOT_PAIRED is not reported as another error");
  r.close();
});

test("a desktop host whose token snugd refuses (401 UNAUTHORIZED) is told to pair again too, never NETWORK_ERROR", async (t) => {
  t.mock.method(globalThis, "fetch", async () =>
    new Response(JSON.stringify({ error: { code: "UNAUTHORIZED", message: "the token is not valid", retryable: false } }), {
      status: 401,
      headers: { "Content-Type": "application/json", "WWW-Authenticate": 'Bearer realm="snugd"' },
    }));
  const told = [];
  const errors = [];
  const r = new Runner(new Snugd({ token: "snugh_old" }), { onNotPaired: (e) => told.push(e.code), onError: (e) => errors.push(e.code) });
  const app = r.mount({ appendChild() {} }, { appId: "mine", html: "<p>hi</p>" });
  const win = app.iframe.contentWindow;
  dispatch(win, { type: "snug:net-request", v: 1, requestId: "r1", instanceId: app.instanceId, url: "snug-connection://x/", method: "GET" });
  await until(() => win.posted.some((f) => f.type === "snug:net-response"));
  const answer = win.posted.find((f) => f.type === "snug:net-response");
  assert.equal(answer.ok, false);
  assert.equal(answer.error.code, "NOT_PAIRED");
  assert.equal(answer.error.retryable, false);
  assert.deepEqual(told, ["UNAUTHORIZED"]);
  assert.deepEqual(errors, []);
  r.close();
});

test("a runner without a confirm hook leaves other runners' confirms alone", async (t) => {
  const decided = [];
  const confirms = { c1: { id: "c1", appId: "theirs" }, c2: { id: "c2", appId: "mine" } };
  t.mock.method(globalThis, "fetch", async (url, init) => {
    const id = url.split("/").pop();
    if (init.method === "POST") {
      decided.push([id, JSON.parse(init.body).decision]);
      return new Response(null, { status: 204 });
    }
    return new Response(JSON.stringify({ confirm: confirms[id] }), { status: 200, headers: { "Content-Type": "application/json" } });
  });
  const r = new Runner(new Snugd({ token: "t" }), {});
  r.mount({ appendChild() {} }, { appId: "mine", html: "" });
  await r.handleConfirm("c1");
  await r.handleConfirm("c2");
  assert.deepEqual(decided, [["c2", "deny"]], "only its own app's confirm is denied; another runner's is not touched");
  r.close();
});
