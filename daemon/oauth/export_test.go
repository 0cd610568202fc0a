package oauth

// IsLoopbackRedirect reports whether uri is a loopback redirect: http to a
// loopback IP literal, which needs PKCE. The tests ask it of
// checkRedirectURI, the one rule AuthorizeURL applies.
func IsLoopbackRedirect(uri string) bool {
	loopback, err := checkRedirectURI(uri)
	return err == nil && loopback
}

// DeadToken is deadToken, for the fuzz target.
func DeadToken(m RevokeMethod, status int, body []byte) bool { return deadToken(m, status, body) }
