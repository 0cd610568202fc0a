// Package requirement is the connection requirement contract:
// the strict parser with every bound and coherence
// rule, the credential-shaped value detector, the canonical form, host
// normalization and deriveConnectionAllowedHosts.
//
// Every path that lets a requirement into snugd goes through Parse: the
// five writers and reconnect, import reconciliation ("validates
// strictly"), the re-validation reapproveConnection owes a pending
// requirement, the registry's substitution, and the API's
// validation answers (a 422's details are Parse's violations). Other
// packages import the rules from here and never restate them: ValidSlot
// for the slot rule (connection URLs, the API), NormalizeHost for
// both sides of the ceiling check (gate 4), IsRFC1918Literal for the LAN
// class, DeriveAllowedHosts and HostsJSON for the frozen ceiling.
//
// Imports: the standard library, daemon/template, golang.org/x/net (idna)
// and golang.org/x/text (unicode/norm).
//
// # The document
//
// A requirement is one JSON object with these keys; every
// length counts UTF-16 code units, as the spec's TypeScript schema and the
// template lint count a string's length (a character outside the Basic
// Multilingual Plane, such as an emoji, counts twice), and every object at
// every level admits only its listed keys (an unknown key anywhere is
// key.unknown):
//
//	slot              required  ^[a-z0-9][a-z0-9-]{0,39}$ (SlotPattern)
//	provider          required  {name, homepageUrl?, docsUrl?}
//	  name            required  1–120 printable ASCII (below)
//	  homepageUrl     optional  https URL ≤ 300 (URLs, below)
//	  docsUrl         optional  https URL ≤ 300
//	kind              required  one of the seven Kinds
//	fields            optional  1–8 × {key, label, type, description?, placeholder?, required?}
//	  key             required  ^[a-z0-9_]{1,40}$, unique across both layers
//	  label           required  1–80, plain prose
//	  type            required  text | secret | password | url
//	  description     optional  1–200, plain prose
//	  placeholder     optional  1–60, plain characters (angle brackets allowed)
//	  required        optional  boolean; absent stays absent
//	registration      optional  {consoleUrl?, instructions?}
//	  consoleUrl      optional  https URL ≤ 300
//	  instructions    optional  ≤ 10 × 1–300, plain prose
//	endpoints         optional  {authorize?, token?, refresh?, revoke?}: https URLs ≤ 300, no fragment
//	scopes            optional  ≤ 64 × 1–200 RFC 6749 scope-tokens, each listed once
//	pkce              optional  boolean; true when absent on both OAuth kinds
//	authorizeParams   optional  ≤ 16 × name ^[A-Za-z0-9_.\[\]-]{1,64}$ → 1–300 plain characters,
//	                            never a parameter snugd sets (ReservedAuthorizeParams)
//	request           optional  {headerTemplate?, queryTemplate?}: objects of name → template
//	userLayer         registry  only with Options.AllowUserLayer (below)
//	lanHost           optional  {class: "rfc1918-ipv4-literal", label: 1–80 plain prose}
//	declaredApiHosts  see XOR   1–32 hostnames ≤ 253, normalized (NormalizeHost)
//	testRequest       optional  {method: exactly "GET", pathAndQuery}
//	  pathAndQuery    required  1–200 printable ASCII without spaces, '#' or '\';
//	                            starts with '/' but not "//"; valid percent escapes
//
// The document is at most MaxSize bytes of strict JSON: valid UTF-8, no
// duplicate key in any object, no lone surrogate escape, no byte order
// mark, one top-level object, nothing after it. A JSON null is a type
// mismatch everywhere, never "absent".
//
// The seats kept in the registry — pairing, webRegistration,
// webRedirectPosture, browserCallable, auth options, aliases — are not keys
// of a requirement, so a requirement carrying one is refused as key.unknown.
//
// # Templates
//
// The envelope of request.headerTemplate and request.queryTemplate (at most
// 8 entries each, name charsets, values ≤ 300, refused Host,
// Content-Length and Transfer-Encoding headers) and their grammar belong to
// daemon/template's lint. Parse reads their JSON shape, runs template.Lint
// once with the declared field keys of both layers (one resolution for both
// placements) and turns each Finding into a Violation under the
// finding's own rule name. A finding whose path or message could carry a
// credential-shaped fragment is reported with a fixed path or sentence.
//
// # Kinds and coherence
//
// The seven kinds are append-only constants (Kinds); widening the set is a
// code change, never configuration, and no Options value admits another
// kind. Coherence rules enforced at parse:
//
//   - none carries no fields (key present at all, even []) and no
//     headerTemplate or queryTemplate (an empty request object is fine), and
//     still requires declaredApiHosts, also beside a lanHost;
//   - linked_device declares fields (at least one, of any type) and carries
//     no endpoints key and no lanHost;
//   - oauth2_auth_code and oauth2_client_creds default pkce to true.
//
// Nothing is invented for api_key, bearer_token and basic_auth: they may
// carry any optional seat.
//
// # Hosts and their XOR
//
// Exactly one host source:
//
//	lanHost  declaredApiHosts                 verdict
//	absent   1..32 hosts                      accepted — the ordinary shape
//	absent   absent or []                     refused (hosts.required, array.too-short)
//	present  absent                           accepted — pre-collection
//	present  exactly one RFC-1918 literal     accepted — post-collection
//	present  off-class host, ≥ 2 hosts, []    refused (lan-host.host-class, lan-host.host-count, array.too-short)
//
// The collected address is a LAN row's only host source: beside a lanHost
// the endpoints key and a userLayer are refused (lan-host.host-class), since
// their hosts would join the ceiling of a row reviewed as a device on the
// user's own network, and a pre-collection row would not derive the empty
// ceiling a requirement must have.
//
// Beside a lanHost the one host must be a canonical RFC-1918 dotted quad
// (IsRFC1918Literal) and is kept as written. Everywhere else a host must be
// a DNS hostname: NormalizeHost refuses IP literals in every
// spelling and the numeric spellings browsers read as IPv4 (127.1, 0x7f.1,
// 2130706433), and normalizes the rest (IDNA non-transitional ToASCII
// under a strict lookup profile, lowercase: "API.Bücher.de" becomes
// "api.xn--bcher-kva.de"). Two entries that normalize alike are refused.
//
// DeriveAllowedHosts is the frozen ceiling: declaredApiHosts ∪ every OAuth
// endpoint's host ∪ the userLayer's declared and endpoint hosts, sorted,
// unique, normalized; lanHost adds nothing, so a pre-collection row's
// ceiling is empty ("[]" from HostsJSON) and refuses every host.
//
// # URLs
//
// Every URL seat — homepageUrl, docsUrl, consoleUrl and the four endpoints
// — is held to the rules its host would face in a ceiling, because a
// reviewer reads all of them as "where this goes" and the endpoint hosts
// become ceiling members: printable ASCII without spaces or backslashes
// (percent-encode the rest), exactly "https://", no userinfo (not even an
// empty '@'), a DNS host already in normalized form (lowercase, punycode;
// an IP literal or numeric spelling is refused), a canonical port 1–65535
// if any, valid percent escapes, no credential-named query parameter with
// a value (?key=…, ?token=…), and nothing credential-shaped. Endpoints
// also carry no fragment (RFC 6749 §3.1). A URL is never rewritten: its
// host must already be normal, so the reviewed URL is the stored one and
// its host is byte-for-byte the ceiling's.
//
// # Text
//
// Every free-text seat refuses control characters, format characters
// (zero-width, bidi controls, BOM, soft hyphen, tags), private-use
// characters, line and paragraph separators and noncharacters; leading or
// trailing whitespace; and text not in NFC. Hosts render these seats as
// plain text: registration.instructions as a numbered list, never HTML,
// never links, and consoleUrl with its full host visible. Because a
// rendering mistake would otherwise become phishing dressed in the host's
// chrome, the prose seats (instructions, field labels and descriptions,
// lanHost.label, provider.name) also refuse markup: HTML/XML tags, comments
// and character references, Markdown links, images and reference
// definitions, and javascript:, vbscript: and data: URLs. Plain URLs in
// prose are allowed and stay text. Placeholders are sample input, so
// "<your API key>" is allowed there.
//
// provider.name is printable ASCII, U+0020–U+007E: it stops
// non-ASCII homoglyphs (Cyrillic "ѕ", fullwidth letters, zero-width and
// bidi characters) and the registry-key evasion they enable; leading,
// trailing and doubled spaces are refused for the same reason. It does not
// stop pure-ASCII look-alikes ("5potify", "C0inbase" are accepted); those
// are the registry host trigger's and the review screen's provenance
// disclosure's to carry, and a host must not present this guard to users as
// protection against look-alike names.
//
// # Credentials
//
// A requirement never contains a credential value.
// DetectCredential runs over every string the requirement holds but the
// fixed vocabularies (kind, field type, lanHost class, testRequest method)
// — slot, provider name and URLs, field keys, labels, descriptions,
// placeholders, instructions, console URL, endpoints, scopes,
// authorizeParams names and values, lanHost.label, declared hosts,
// testRequest.pathAndQuery, and template names, static text and quoted
// literals — and a hit is credential.detected at that seat. The detector
// fails closed; its shapes, thresholds and documented false positives are
// listed on DetectCredential. Placeholders and examples should be
// illustrative ("your API key", "sk_live_…"), never realistic.
//
// # userLayer
//
// The embedded org→user second layer is registry-synthesized
// only: Parse refuses it (user-layer.channel) unless Options.AllowUserLayer
// is set, and only the registry's substitution code sets it. The decision
// rests on the channel and never on the content, so on a refusing channel
// its content is not even read. Its shape is snugd's (the spec's .ts is not
// available): {kind, fields?, registration?, endpoints?,
// scopes?, pkce?, authorizeParams?, declaredApiHosts?}, with the same
// bounds and kind rules as the top level, field keys unique across both
// layers (both layers' values share the slot's auth:<appId>:<slot>:
// namespace), and no slot, provider, request, lanHost, testRequest or
// nested userLayer.
//
// # Violations
//
// Parse returns every violation, never only the first, sorted by path
// (array indices compared as numbers), then rule, then message. A path is
// dotted keys and [i] indices ("fields[2].key",
// "request.headerTemplate.X-Key"); "$" is the document itself. An object
// key that is unknown or user-chosen (authorizeParams, template names) is
// written as itself only when it is short, plain and not credential-shaped,
// and otherwise by its position ("authorizeParams.#3"). Messages are fixed
// sentences with numbers at most; no violation repeats a value. The rule
// names are the Rule* constants; they are API and never change meaning.
//
// # Canonical form
//
// Requirement.Canonical writes a requirement in the canonical form of
// Keys sorted recursively by UTF-8 bytes, no whitespace, arrays in
// order (array order is significant: instructions are a numbered
// walkthrough, fields the wizard's order, scopes what review renders),
// minimal string escapes without HTML escaping, one exact spelling per
// number. Canonical forms are compared as strings, never as digests.
//
// It encodes the requirement after normalization: hosts normalized, empty
// optional containers omitted (an empty scopes list and an absent one are
// the same requirement), and pkce written explicitly on both OAuth kinds,
// so relying on the default and spelling it out store identical text. It
// is what the writers store as requirement_json and compare for
// requirement_version bumps, and it is stable: Parse(r.Canonical()) equals
// r and re-encodes to the same string.
//
// Everything in this package is safe for concurrent use.
package requirement
