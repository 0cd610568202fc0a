// Package template is the credential template language:
// the lint a requirement passes before it is
// reviewed, stored or rendered, and the render engine that turns declared
// credential fields into header and query values.
//
// Templates are the one place where credential values become bytes on the
// wire. A typo would silently sign the wrong string and a resolved quoted
// literal would disclose a credential, so the language is small and exact:
// Compile lints a requirement's header and query templates against one
// resolution of its declared field keys and compiles them into a Set; a Set
// holds nothing unresolved, and Set.Render has no fallback path that could
// read an unknown name as text.
//
// Imports: the standard library and golang.org/x/crypto only.
//
// # Grammar
//
// A template value is literal text with placeholders embedded in it.
// In EBNF, over the characters of the value:
//
//	template    = { text | placeholder } ;
//	text        = printable ASCII (U+0020–U+007E); "{{" opens a placeholder and
//	              "}}" is an error; a lone "{" or "}" is text ;
//	placeholder = "{{" sp expr sp "}}" ;
//	expr        = name | literal | call ;
//	call        = helper "(" sp [ arg { sp "," sp arg } ] sp ")" ;
//	arg         = name | literal ;                 (never a call: the grammar is flat)
//	name        = field-key | request-token ;
//	literal     = "'" { char | "\'" | "\\" } "'" ;
//	sp          = { " " } ;                        (ASCII spaces only)
//
// "{{" always opens a placeholder, leftmost first: "{{{x}}" is an error,
// not "{" followed by "{{x}}" (write "{{'{'}}{{x}}"). No space may stand
// between a helper's name and its "(".
//
// A name is a declared field key of the requirement or one of the five
// request tokens: request.method, request.url, request.pathAndQuery,
// request.body and request.timestamp. Anything else is an unknown
// identifier and a finding that names the nearest declared key or token
// ("unknown identifier api_secrt: did you mean api_secret?").
//
// A literal is single-quoted; its only escapes are \' and \\. Placed
// directly ({{'text'}}) it is printable ASCII, like static text; as a
// helper's argument it may hold any character except control and format
// characters, so base64('é') is "w6k=". A template value is at most 300
// characters, counted as UTF-16 code units (the spec's JavaScript reference
// counts string length that way; it is never laxer than counting code
// points).
//
// # Helpers
//
// The helper enum is pinned: five members with fixed arities.
// Nothing configures another; helper names are matched exactly.
//
//	timestamp()                     0    the pass's timestamp: unix seconds in decimal
//	base64(s)                       1    standard base64, padded, of the UTF-8 bytes of s
//	hmac_sha256(key, message)       2    lowercase hex of HMAC-SHA256 keyed with key's bytes
//	hmac_sha256_b64(secret, p1…p5)  2–6  base64(HMAC-SHA256(base64decode(secret), p1‖…‖p5))
//	cdp_jwt(keyName, privateKey)    2    a Coinbase CDP Ed25519 JWT
//
// hmac_sha256_b64 decodes its secret as standard base64, padded or not; a
// secret that does not decode is a render error naming its field. Both
// arguments of cdp_jwt must be declared field keys, never literals or
// request tokens. cdp_jwt signs with Ed25519 only: the key is base64 of 64
// bytes (seed ‖ public key, as the CDP SDK issues it; the public half must
// match the seed) or of a 32-byte seed. Its header is
// {"alg":"EdDSA","kid":keyName,"nonce":<16 random bytes, hex>,"typ":"JWT"},
// its claims {"sub":keyName,"iss":"cdp","aud":["cdp_service"],"nbf":ts,
// "iat":ts,"exp":ts+120,"uris":["METHOD host/path"]}, and uris follows the
// CDP SDK: lowercased host (a default port dropped) and the path as sent,
// without the query (see cdpURI for the check of the SDK's source).
//
// # Rendering
//
// One render pass covers both placements. It reads the clock once, and
// every timestamp() and request.timestamp of that pass, in headers and
// query alike and inside cdp_jwt, is that one value: a signature
// recomputed from the sent timestamp always matches the sent signature.
// request.timestamp is minted by the pass, never taken from the request.
//
// A quoted argument renders verbatim and is never resolved:
// {{base64('api_key')}} is base64 of the text "api_key" even when api_key
// is a declared field holding a live credential.
//
// A referenced field with no value (absent or empty) is an error naming the
// key (ErrMissingValue). A rendered header value holding CR, LF, NUL, any
// other control byte (tab included) or a non-ASCII byte is an error. Query
// values are returned unencoded; PlaceQuery percent-encodes them onto the
// URL. Rendered.Secrets lists what the executor scrubs. Errors and findings
// never carry a credential value.
//
// # Lint rules
//
// Finding.Path is relative to the requirement: "request.headerTemplate.<Name>"
// or "request.queryTemplate.<name>" for a template entry,
// "request.headerTemplate" or "request.queryTemplate" for the placement as
// a whole, "fields" for the declared field keys. Finding.Rule is one of
// these stable names (the Rule* constants):
//
//	template.too-many-entries       a placement has more than 8 entries
//	template.header-name            a header name does not match ^[A-Za-z0-9-]{1,64}$
//	template.query-name             a query name does not match ^[A-Za-z0-9_.\[\]-]{1,64}$
//	template.reserved-header        a header template names Host, Content-Length or
//	                                Transfer-Encoding, or another framing or
//	                                hop-by-hop header that ruling R3 refuses from an app:
//	                                Connection, TE, Trailer, Upgrade, Keep-Alive, Proxy-*
//	template.duplicate-header       two header templates differ only in case
//	template.reserved-field-key     a declared field key spells a helper or "request"
//	template.too-long               a value is longer than 300 characters
//	template.non-printable          a character its position does not admit: outside
//	                                printable ASCII in text or a directly placed literal,
//	                                a control or format character in any literal, or a
//	                                value that is not UTF-8
//	template.whitespace             whitespace other than ASCII space inside a placeholder
//	template.stray-close            "}}" outside a placeholder
//	template.unclosed               "{{" never closed
//	template.empty-placeholder      "{{}}" or "{{ }}"
//	template.unterminated-literal   a quote never closed
//	template.bad-escape             a backslash not starting \' or \\
//	template.syntax                 any other malformed placeholder (a stray quote, a
//	                                missing argument or comma, two expressions, …)
//	template.unknown-identifier     a name that is neither a declared field key nor a
//	                                request token; the message names the nearest one
//	template.unknown-helper         a call to a helper outside the enum
//	template.arity                  a helper called with the wrong number of arguments
//	template.nested-call            a call in argument position: rejected, never evaluated
//	template.cdp-jwt-argument       a cdp_jwt argument that is a literal or request token
//
// Compile reports every finding, not the first: after a syntax error the
// lint skips to the next "}}" and goes on.
package template
