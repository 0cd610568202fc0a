// Package registry is snugd's registry of pinned providers:
// embedded, reviewed data validated when it loads,
// the borrow ban that substitutes pinned values into a requirement that
// names or reaches a registered provider, and the render-time capability
// facts a wizard asks for.
//
// Imports: the standard library, daemon/requirement and daemon/template.
//
// # The data
//
// The registry ships inside the binary: data/<id>.json, one entry per
// file, embedded with go:embed. There is no configuration that adds,
// replaces or loosens an entry; a change is a reviewed change to those
// files. Load decodes them strictly — one JSON object per file, keys
// matched byte for byte (encoding/json would match them case-blind), an
// unknown key, a duplicate key or a null anywhere refused — and checks
// every rule below; the daemon refuses to start on an error. A LoadError
// names the file, the seat, the rule (the Rule* constants) and the problem.
//
// An entry file has these keys:
//
//	id                      required  ^[a-z0-9][a-z0-9-]{0,39}$, and the file is <id>.json
//	displayName             required  a valid provider.name
//	aliases                 optional  ≤ 16 further provider names that trigger the borrow
//	homepageUrl, docsUrl    optional  the provider block a borrow writes
//	sources                 required  ≥ 1 × {url (https), checked (YYYY-MM-DD), note?}: the
//	                                  documentation the entry was checked against
//	hosts                   see below the pinned hosts, already normalized
//	lanHost                 optional  {class, label}: a LAN entry
//	registration            optional  the entry walkthrough {consoleUrl?, instructions?}
//	scopes                  optional  the entry-level scope pin
//	testRequest             optional  {method: "GET", pathAndQuery}
//	options                 required  1–8 auth options (below)
//	defaultOption           see below the option ID a non-matching declaration gets
//	pairing                 optional  the pairing seat (below)
//	browserCallable         optional  true or false; absent means unknown
//	desktopRedirectPosture  optional  "loopback"; absent means not vouched
//	webRedirectPosture      optional  "origin-callback", only with webRegistration
//	webRegistration         optional  the web-surface walkthrough, only with webRedirectPosture
//	helper                  optional  {id, executable}: a linked-device helper
//	tokenAuth               optional  client_secret_basic (absent) or client_secret_post
//	scopeSeparator          optional  ",": the provider joins scopes with commas
//	revocation              see below {method, url?, manageAccessUrl?}: how a grant is withdrawn
//
// An auth option is {id, label, kind, fields?, registration?, endpoints?,
// pkce?, authorizeParams?, request?, userLayer?}: a complete credential
// flow with the requirement shapes. It carries no identity
// seat — displayName, name, provider, aliases, hosts, declaredApiHosts,
// lanHost, scopes or slot is refused with RuleOptionIdentity — because
// which hosts may receive a credential, under which name and with which
// privilege breadth is a per-provider decision, never a per-flow one. An
// option without a registration uses the entry walkthrough.
//
// # Load-time rules
//
// Each is checked at load and has its own test with a broken registry
// under testdata/broken.
//
//   - Every option, combined with its entry into a requirement (slot: the
//     entry ID; provider: the display name and URLs; declaredApiHosts: the
//     pinned hosts; the entry's lanHost, scopes and testRequest), passes
//     requirement.Parse with AllowUserLayer. That is how the registry's own
//     data is reviewed: its templates are linted, its walkthroughs are
//     plain text, its URLs are https on normalized hosts, nothing in it is
//     credential-shaped, and the kind's coherence rules hold.
//   - The ceiling a borrowed requirement derives is exactly the pinned
//     hosts: every endpoint and userLayer host is pinned, and a LAN
//     entry's pre-collection ceiling is empty.
//   - Hosts are written normalized (requirement.NormalizeHost is the
//     identity on each) and are DNS names; an ordinary entry pins 1–32, a
//     LAN entry none (its one host is the address the user collects). No
//     host is pinned twice, in one entry or across entries. A host under
//     .invalid is only ever the entry's own helper's symbolic host.
//   - No two entries share a display name or alias, compared
//     case-insensitively; every name is a valid provider.name.
//   - Several options name a default; no two options pin the same set of
//     field keys (a declaration could not pick between them).
//   - Pairing: exactly three families (exchange, device-link,
//     token-claim), each with a required verify probe saying what a live
//     counterparty answers: a GET of a path for the HTTP families, the
//     helper's "verify" method for device-link. exchange carries its POST
//     (path, JSON body, expected answer) and exists only on a LAN entry, and
//     a LAN entry pairs only by exchange; token-claim carries its pinned
//     access path; device-link needs the entry's helper, and a helper needs
//     device-link. A pairing entry has exactly one option, and the seat
//     names the option field the ceremony fills.
//   - webRedirectPosture and webRegistration require each other, need an
//     OAuth option, and the posture's sole member is origin-callback; the
//     web walkthrough follows the registration rules.
//   - desktopRedirectPosture's sole member is loopback; it needs an
//     oauth2_auth_code option, and every such option keeps PKCE on: pkce
//     false beside a loopback redirect leaves auth-code injection
//     undefendable, so the combination is refused.
//   - A helper is {id, executable}: the ID is one DNS label, its symbolic
//     host <id>.sidecar.invalid is the entry's one pinned host, every option
//     is linked_device (and a linked_device option needs a helper), and the
//     executable is a bare file name snugd looks up in its own install
//     directory, never a path.
//   - An entry with an authorization-code option says how its grant is
//     withdrawn: revocation.method is rfc7009 (POST token and
//     token_type_hint to endpoints.revoke), token-and-client-id (POST
//     only those two fields there, as Twitch documents), github-grant
//     (DELETE the url, https on a pinned host with {client_id} in its
//     path, with Basic client credentials), bearer (POST endpoints.revoke
//     with the access token as bearer, as Dropbox documents) or none.
//     endpoints.revoke is set exactly beside the three methods that post
//     to it.
//     manageAccessUrl, when the provider's documentation names one, is
//     the https page where the user removes the app; it is what a revoke
//     that could not withdraw the grant points to. tokenAuth and
//     scopeSeparator need an OAuth option. OAuthProtocol hands these
//     seats to the daemon for a row whose authorize and token URLs
//     byte-match an option's pin.
//   - Free text the schema never sees (labels, source notes, probe
//     expectations, the exchange body) is plain, bounded and not
//     credential-shaped.
//
// # The borrow ban
//
// Resolve applies the borrow ban's first rule. Both triggers are checked on every
// requirement, whatever its kind (an api_key requirement naming an OAuth
// provider borrows too):
//
//   - name: provider.name equals an entry's display name or alias,
//     case-insensitively (the name is printable ASCII in NFC
//     after requirement.Parse). A rename ("5potify") evades this one;
//   - host: a host of the requirement's ceiling — declaredApiHosts,
//     endpoint hosts and userLayer hosts, normalized as
//     requirement.DeriveAllowedHosts does — is a pinned host. A name
//     evades this one when no declared host overlaps; the name trigger
//     catches it.
//
// On a hit the registry's values replace the declaration's; nothing is
// merged. The result is the entry's requirement for the chosen option with
// the declaration's slot: pinned hosts, the option's endpoints, the
// walkthrough, the provider block, the entry's scope pin (or none: the
// registry, not the app, decides privilege breadth), kind, fields,
// templates, pkce, authorizeParams, userLayer and testRequest. The option
// is the one whose pinned field keys equal the declaration's (both layers,
// as a set), or else the default. For a LAN entry the collected address is
// kept — the registry has nothing to substitute — and its class is checked
// here, independently of the schema: none (pre-collection) or exactly one
// RFC-1918 literal, else ErrLANAddress. The result passes requirement.Parse
// of its canonical form with AllowUserLayer (the registry is the
// only caller allowed to set it). Triggers that hit two entries are refused
// with ErrConflict, never resolved. A borrow is reported as such
// (Resolution.Borrowed, the entry and option, the triggers and the
// Disclosure sentence) so the review screen can surface it and the writers
// record provenance "registry".
//
// ResolveOption is the same with the option picked by the user among the
// entry's alternative flows; Lookup and Entries list them.
//
// A requirement that triggers nothing comes back unchanged, after
// requirement.Parse of its canonical form without AllowUserLayer, so a
// value built past the parser is refused rather than waved through.
//
// # Render-time facts
//
// WebRegistration, DesktopRedirect, BrowserCallable and Pairing answer from
// the registry for a requirement row when a wizard renders; the answers are
// never persisted and never become part of a requirement. The OAuth facts
// bind to the row's authorize and token URLs, which must byte-match an
// option's pin; the others bind to the row's ceiling, which must lie within
// one entry's pinned hosts (a LAN row binds by its lanHost and name). A row
// that binds to nothing gets "unknown" (browserCallable nil), "not vouched"
// (the desktop flow refuses at entry with ErrRedirectUnvouched, never
// guessing) or its own walkthrough (an absent web seat does not refuse).
//
// HelperForHost is the executor's question at gate 5: is this host the
// symbolic host of a registered helper? Matching is exact, byte for byte,
// and covers those names and nothing else.
//
// Everything in this package is safe for concurrent use.
package registry
