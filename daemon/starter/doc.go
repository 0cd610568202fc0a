// Package starter holds the starter apps snugd bundles and the install
// act's vouching of them: the third proposer, whose
// requirements come from the starter's own connection.json and are always
// reviewed strongly, field by field.
//
// Imports: the standard library, daemon/requirement and daemon/template.
//
// # The bundle
//
// Each starter is a directory data/<id>/ embedded with go:embed, holding
// exactly two files:
//
//   - index.html: a small, working single-file micro-app. It has
//     no network of its own: it sends snug:net-request frames to its host
//     by postMessage and addresses its connection by slot, as
//     snug-connection://<slot>/<path>, so no host is baked into
//     HTML that installed apps never rebuild;
//   - connection.json: a JSON array of 1 to 8 requirements (the
//     shapes of ruling R23). Each passes requirement.Parse with zero
//     Options at load: a starter manifest is a manifest channel, never the
//     registry, so a userLayer is refused.
//
// The shipped starters are weather (OpenWeather, slot "weather") and
// lights (Philips Hue on the LAN, slot "hue", in the pre-collection shape:
// the wizard collects the bridge's address). Their requirements are
// written exactly as snugd's registry resolves them, so the borrow ban
// changes nothing on install and the review shows what the file says.
//
// # Vouching
//
// Catalog.Vouch is the two-fact check: the app's install_source must be a
// bundled starter's ID, and the SHA-256 of the installed HTML — of both the
// pinned factory version and the current version — must equal the digest
// of the bundled bytes (compared in constant time). A mismatch means the
// declaration is not vouched and is treated as absent: no row is written
// from it. A vouched install proposes the bundled requirements
// (Manifest.Requirements) with provenance "starter", never a
// connection.json the host sent along.
//
// Everything in this package is safe for concurrent use.
package starter
