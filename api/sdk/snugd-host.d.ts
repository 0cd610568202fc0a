// Type declarations for snugd-host.js (the host SDK). See api/sdk/README.md.

export const SDK_VERSION: string;
export const DEFAULT_BASE: string;
export const CDN_ALLOWLIST: readonly string[];
export const RUNNER_CSP: string;

/**
 * The code of snugd's refusal to a page whose origin is not paired, or no
 * longer is, or whose token is not its own (status 401, not retryable):
 * forget the token and pair again. Never confused with `NETWORK_ERROR`,
 * which means snugd did not answer at all.
 */
export const NOT_PAIRED: "NOT_PAIRED";

/** The codes the SDK itself reports, beside the API's own. */
export type LocalErrorCode = "NETWORK_ERROR" | "ABORTED" | "PAIRING_DENIED" | "PAIRING_EXPIRED" | "HOST_ERROR" | "BAD_REQUEST";

/**
 * Every failure the SDK reports. `code` is the API's error code (api/API.md:
 * `NOT_PAIRED`, `UNAUTHORIZED`, `RATE_LIMITED`, …) or a local one.
 */
export class SnugdError extends Error {
  readonly code: typeof NOT_PAIRED | LocalErrorCode | (string & {});
  readonly status: number;
  readonly retryable: boolean;
  readonly details?: { path: string; rule: string }[];
  readonly retryAfter?: number;
  constructor(code: string, message: string, o?: { status?: number; retryable?: boolean; details?: unknown; retryAfter?: number });
}

export function makeVerifier(): Promise<{ verifier: string; challenge: string }>;
export function challengeOf(verifier: string): Promise<string>;
export function sha256Hex(data: string | Uint8Array): Promise<string>;
export function checkOpenURL(frame: Record<string, unknown>): string | null;
export function withRunnerCSP(html: string): string;

export interface PairingCode {
  code: string;
  /** The exact command the administrator runs: `snugd ctl hosts approve CODE`. */
  command: string;
  expiresAt: string;
  pairingId: string;
}

export function pair(o: {
  base?: string;
  name: string;
  surface?: "web" | "desktop";
  origin?: string;
  /** An administrator's invitation (`snugd ctl hosts invite NAME`), desktop only: the request is approved when recorded, and onCode is not called. */
  invitation?: string;
  onCode?: (p: PairingCode) => void;
  signal?: AbortSignal;
}): Promise<{ token: string; base: string }>;

export type Status = "declared" | "approved" | "revoked";
export type Provenance = "registry" | "inference" | "user_docs" | "starter" | "user";

export interface Connection {
  appId: string;
  slot: string;
  status: Status;
  needsReapproval: boolean;
  requirement: Requirement;
  pendingRequirement: Requirement | null;
  requirementVersion: number;
  allowedHosts: string[];
  provenance: Provenance;
  confidence: number | null;
  imported: boolean;
  borrowed: boolean;
  createdAt: string;
  updatedAt: string;
  approvedAt: string | null;
  revokedAt: string | null;
  invalid?: { path: string; rule: string }[];
  state: ConnectionState | null;
  standing: Standing | null;
}

export interface ConnectionState {
  status?: "pending" | "connected" | "expired" | "error";
  obtainedAt?: string;
  expiresIn?: number;
  scopesGranted?: string[];
  lastError?: string;
  lanPin?: { fingerprint: string; cn?: string };
  lanVerifiedAt?: string;
  linkVerifiedAt?: string;
  claimVerifiedAt?: string;
  [k: string]: unknown;
}

/** A requirement: one JSON object. */
export interface Requirement {
  slot: string;
  provider: { name: string; homepageUrl?: string; docsUrl?: string };
  kind: string;
  fields?: { key: string; label: string; type: string; description?: string; placeholder?: string; required?: boolean }[];
  [k: string]: unknown;
}

export interface Proposal {
  connection: Connection;
  staged: boolean;
  borrowed: boolean;
  disclosure?: string;
  entryId?: string;
  claimedProvenance?: string;
  claimedConfidence?: number;
}

export interface Review {
  connection: Connection;
  posture: "manual" | "strong" | "pinned";
  borrowed: boolean;
  disclosure?: string;
  diff: { path: string; old: unknown; new: unknown }[];
  hosts: string[];
  pendingHosts: string[] | null;
  pendingScopes: string[] | null;
  scopes: string[];
  instructions: string[];
  consoleUrl?: string;
  consoleHost?: string;
  pairingFamily?: string;
  pairingOwed?: boolean;
  /** Binds an approval to exactly this review, when the daemon issues one. */
  reviewToken?: string;
  [k: string]: unknown;
}

export interface Confirm {
  id: string;
  appId: string;
  host: string;
  method: string;
  url: string;
  slot?: string;
  bodyPreview?: string;
  probe: boolean;
  delivery: "app" | "llm";
  createdAt: string;
  expiresAt: string;
}

export interface Standing {
  id: string;
  appId: string;
  slot: string;
  target: string;
  trigger: string;
  maxSends: number;
  windowSeconds: number;
  quietHours?: { start: string; end: string; timeZone?: string };
  armedAt: string;
  sendsInWindow: number;
}

export interface Hint {
  event: "confirm-pending" | "connection-changed" | "flow-updated" | "helper-changed" | string;
  data: Record<string, unknown>;
}

/** A snug:net-response frame (an ok answer or an error envelope). */
export interface NetResponse {
  type: "snug:net-response";
  v: 1;
  requestId: string;
  ok: boolean;
  status?: number;
  headers?: Record<string, string>;
  body?: string;
  truncated?: boolean;
  error?: { code: string; message: string; retryable?: boolean };
}

export class Snugd {
  constructor(o: { base?: string; token: string });
  readonly base: string;
  token: string;
  health(): Promise<{ ok: boolean; version: string }>;
  status(): Promise<Record<string, unknown>>;
  registry(): Promise<{ entries: Record<string, unknown>[] }>;
  connections(appId: string): Promise<Connection[]>;
  facts(appId: string): Promise<Record<string, unknown>[]>;
  proposeUser(appId: string, requirement: Requirement): Promise<Proposal>;
  proposeDirective(appId: string, directive: Record<string, unknown>, o?: { userDocs?: boolean }): Promise<Proposal>;
  install(appId: string, o: { starterId: string; html: string | Uint8Array; factorySha256?: string }): Promise<Proposal[]>;
  option(appId: string, slot: string, optionId: string): Promise<Proposal>;
  review(appId: string, slot: string): Promise<Review>;
  approve(appId: string, slot: string, o?: { review?: Review }): Promise<Connection>;
  reapprove(appId: string, slot: string, o?: { review?: Review }): Promise<Connection>;
  revoke(appId: string, slot: string): Promise<Connection>;
  reconnect(appId: string, slot: string): Promise<Connection>;
  setCredentials(appId: string, slot: string, fields: Record<string, string>): Promise<void>;
  test(appId: string, slot: string): Promise<NetResponse>;
  net(appId: string, frame: Record<string, unknown>, o?: { delivery?: "app" | "llm"; signal?: AbortSignal }): Promise<{ frame: NetResponse; providerError?: string }>;
  confirms(): Promise<Confirm[]>;
  confirm(id: string): Promise<Confirm>;
  decide(id: string, decision: "allow" | "deny", o?: { remember?: "once" | "session" }): Promise<void>;
  journal(o?: { appId?: string; before?: number; limit?: number }): Promise<{ entries: Record<string, unknown>[]; next: number }>;
  /**
   * The hint stream, reconnecting on NETWORK_ERROR until `signal` aborts
   * (then it resolves). It rejects, without retrying, with the refusal of
   * the token: `NOT_PAIRED` for a web page whose pairing ended.
   */
  events(o: { onHint?: (h: Hint) => void; onState?: (s: "open" | "closed") => void; signal?: AbortSignal }): Promise<void>;
}

export interface MountedApp {
  appId: string;
  iframe: HTMLIFrameElement;
  instanceId: string;
  announced: { displayName: string; description: string; iconEmoji: string } | null;
  unmount(): void;
}

export interface RunnerHooks {
  /**
   * Show the confirm in the host's own dialog; answer the person's choice.
   * Without it, the runner denies the confirms of its own mounted apps and
   * decides no other.
   */
  confirm?: (c: Confirm) => Promise<"allow" | "deny" | "session">;
  /** Show the full URL; resolve true only after the person's click. */
  openUrl?: (url: string, app: MountedApp) => Promise<boolean>;
  onError?: (err: SnugdError, app: MountedApp | null) => void;
  /**
   * snugd refused the host's token (`NOT_PAIRED` for a web page,
   * `UNAUTHORIZED` for a desktop host): called once. The hint
   * stream has stopped and the apps' net requests are answered with a
   * `NOT_PAIRED` error frame (not retryable). Forget the token; pair again.
   */
  onNotPaired?: (err: SnugdError) => void;
  onAnnounce?: (app: MountedApp, meta: MountedApp["announced"]) => void;
}

export class Runner {
  constructor(snugd: Snugd, hooks?: RunnerHooks);
  mount(container: Element, o: { appId: string; src?: string; html?: string; title?: string; theme?: string | object }): MountedApp;
  unmount(app: MountedApp): void;
  close(): void;
  hint(h: Hint): void;
  handleConfirm(id: string): Promise<void>;
  listen(o?: { onState?: (s: "open" | "closed") => void }): () => void;
}
