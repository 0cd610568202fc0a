// Package wire is Part I's vocabulary as snugd speaks it: the thirteen
// frame types and their limits, the published JSON Schemas, the
// net-request parser and the net-response encoder. snugd speaks these
// frames at its edge (a host hands it a snug:net-request exactly as the
// app posted it and gets a snug:net-response back).
//
// # Parsing
//
// ParseNetRequest is the one frame parser snugd runs. Every frame carries
// v: 1. net-request is strict: any unknown key and any
// duplicate key rejects the frame.
//
// A refused frame is a *ParseError carrying the code an answer would
// carry (UNSUPPORTED_VERSION, or NET_INVALID_REQUEST for a malformed
// net-request), a message safe to send back, and the requestId recovered
// from the raw frame. ParseError.Answer builds the net-response error
// that answers it, and refuses when no requestId was recovered: such a
// frame is never answered.
//
// ParseNetRequest applies the net-request rules exactly, including the
// rules the published schema cannot carry: no body on GET or HEAD, no
// credential-shaped header (CredentialHeader: the five STRIP_HEADERS after
// lowercasing and mapping '_' to '-'), no transport-owned header, header
// names that are RFC 9110 tokens and unique after lowercasing, header
// values without CR, LF or NUL, and a URL without userinfo, without '%'
// or '\' in its host, without control, format or space characters, with a
// host and a canonical port. The scheme is left to the executor.
//
// Lengths are counted in characters as JSON Schema counts them (Unicode
// code points); frame sizes are the bytes as received (FrameLimit).
// Parsing is one pass over the frame with a small JSON scanner (the
// strict reader of daemon/internal/strictjson): encoding/json matches keys
// case-insensitively and keeps the last of two duplicate keys, which a
// strict frame cannot allow.
//
// # Sending
//
// Encode validates a frame and returns its exact wire bytes (HTML
// characters unescaped, so the size class measures what is sent).
// NewNetResponseText builds the answer to an upstream response (headers
// whitelist-filtered by FilterResponseHeaders, content-length recomputed
// to the body delivered, the body valid UTF-8 as ValidText makes it);
// NetErrorResponse builds an error answer whose envelope (ErrorBodyOf)
// always has code, message and retryable, and never a reserved code. EncodeNetResponse turns a net-response over its size
// class into the NET_SIZE_EXCEEDED answer and says that it did.
//
// # Schemas
//
// Schema and SchemaTypes expose the JSON Schemas (draft 2020-12) of the
// thirteen frames, embedded from schemas/; GET /v1/schemas serves them.
//
// # What snugd does not speak
//
// snugd is no frame host: it parses net-requests and writes
// net-responses, and nothing else of Part I. The other eleven frame types
// appear here only as names (FrameTypes) with their size classes
// (FrameLimit) and their published schemas. testdata/corpus holds frames
// of all thirteen types that the schemas must accept or reject, and the
// net-requests among them that ParseNetRequest must refuse although the
// schema accepts them (rules only prose can state). Other packages' tests
// read back the net-responses snugd writes with daemon/wire/wiretest.
//
// Everything here is safe for concurrent use.
//
// Imports: the standard library, daemon/errcode and
// daemon/internal/strictjson only. Every folder may import it.
package wire
