package wire

// Moved from netrequest.go: the parts of the frame library the
// daemon never runs, kept as the tests' oracle.

// NetMethods returns NET_METHODS: the methods a net-request may use,
// matched exactly (uppercase only, ruling R3).
func NetMethods() []string { return []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"} }

// StripHeaders returns STRIP_HEADERS: the credential-shaped header names,
// lowercase. A net-request naming one is malformed (C1), gate 7 strips
// them, and so does the chat envelope boundary.
func StripHeaders() []string {
	return []string{"authorization", "cookie", "set-cookie", "x-api-key", "proxy-authorization"}
}

// StripCredentialHeaders deletes every credential-shaped header from h:
// Part I's C1 strip at the chat envelope boundary, and gate 7's. h may be
// an http.Header.
func StripCredentialHeaders(h map[string][]string) {
	for name := range h {
		if CredentialHeader(name) {
			delete(h, name)
		}
	}
}
