// Package wire is Part I's vocabulary: the thirteen frame types, their
// parsers and limits, the published JSON Schemas, and the chat envelope.
// snugd speaks these frames at its edge (a host hands it a
// snug:net-request exactly as the app posted it and gets a
// snug:net-response back), and a Go host can use the package as it is.
//
// # Parsing
//
// Parse reads a frame of any type; ParseNetRequest, ParseOpenURLRequest and
// ParseNetResponse read one type. Every frame carries v: 1 (R1). Frames
// are tolerant (unknown fields ignored, R2) except the two strict request
// frames, net-request and open-url-request (R4), where any unknown key and
// any duplicate key rejects the frame. A frame with v: 1 and an unknown
// snug:* type comes back as Ignored: drop it silently (R2).
//
// A refused frame is a *ParseError carrying the code an answer would
// carry (UNSUPPORTED_VERSION, NET_INVALID_REQUEST for a net-request,
// HOST_ERROR for the rest, ruling R2), a message safe to send back, and
// the requestId recovered from the raw frame. ParseError.Answer builds
// the answer, and refuses when no requestId was recovered: such a frame
// is never answered (R1).
//
// ParseNetRequest applies Part I §3 and ruling R3 exactly, including the
// rules the published schema cannot carry: no body on GET or HEAD, no
// credential-shaped header (CredentialHeader: the five STRIP_HEADERS after
// lowercasing and mapping '_' to '-'), no transport-owned header, header
// names that are RFC 9110 tokens and unique after lowercasing, header
// values without CR, LF or NUL, and a URL without userinfo, without '%'
// or '\' in its host, without control, format or space characters, with a
// host and a canonical port. The scheme is left to the executor.
//
// Lengths are counted in characters as JSON Schema counts them (Unicode
// code points); frame sizes are the bytes as received (R6, FrameLimit).
// Parsing is one pass over the frame with a small JSON scanner: encoding/
// json matches keys case-insensitively and keeps the last of two
// duplicate keys, which a strict frame cannot allow.
//
// # Sending
//
// Every frame type marshals to JSON with its type and v: 1; Encode
// validates a frame and returns its exact wire bytes (HTML characters
// unescaped, so the size class measures what is sent). NewNetResponse
// builds the answer to an upstream response (headers whitelist-filtered
// by FilterResponseHeaders, content-length recomputed, ruling R21);
// NetErrorResponse, AppErrorResponse and DBErrorResponse build error
// answers whose envelope (ErrorBodyOf) always has code, message and
// retryable, and never a reserved code. Encode turns a net-response over its size class into
// the NET_SIZE_EXCEEDED answer (R6). Host-events are hints (R7): built by
// ConnectionEvent, ThemeChange and Visibility from typed references, and
// forwarded only through RebuildHostEvent.
//
// # Schemas
//
// Schema and SchemaTypes expose the JSON Schemas (draft 2020-12) of the
// thirteen frames, embedded from schemas/. testdata/corpus holds the frames
// on which the schemas and the parsers agree, and those the parsers
// refuse by prose rules the schemas leave out.
//
// # Chat envelope
//
// BuildEnvelope and DetectEnvelope handle the "[SNUG_APP_REQUEST]\n{json}"
// envelope (§6); detection needs both the tag and snug: 1.
// ParseAgentReply finds the agent's JSON object with graduated tolerance,
// and ParseBudget turns failures into PARSE_FAILED envelopes with
// rawExcerpt and attemptsRemaining, three consecutive failures at most.
// StripCredentialHeaders is the C1 strip at the envelope boundary.
//
// Everything here is safe for concurrent use.
//
// Imports: the standard library and daemon/errcode only. Every folder may
// import it, and a Go host can use it as it is.
package wire
