package oauthtest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// The providers' quirks the OP reproduces, each as the provider documents
// it (checked 2026-12-01), so a test sees snugd meet the provider rather
// than an idealized RFC server:
//
//   - Twitch's revocation takes exactly the form fields client_id and
//     token, and answers 400 {"status": 400, "message": "Invalid token"}
//     for a token it no longer honours and 404 for an unknown client
//     (https://dev.twitch.tv/docs/authentication/revoke-tokens/). The fake
//     is strict where Twitch's page is silent: a request with any other
//     field is refused, so a test sees an undocumented field being sent.
//   - GitHub answers its token endpoint form-encoded unless the request
//     says Accept: application/json
//     (https://docs.github.com/en/apps/oauth-apps/building-oauth-apps/authorizing-oauth-apps),
//     and deletes an OAuth app's grant at DELETE
//     /applications/{client_id}/grant with Basic client ID and secret and
//     {"access_token": …}: 204, or 422 when the token is not one of the
//     app's (https://docs.github.com/en/rest/apps/oauth-applications#delete-an-app-authorization).
//     The fake answers 404 for wrong app credentials.
//   - Google issues a refresh token only for access_type=offline
//     (https://developers.google.com/identity/protocols/oauth2/web-server),
//     and its revoke endpoint answers 400 invalid_token for a token it
//     already dropped.
//   - Dropbox issues a refresh token only for token_access_type=offline,
//     and revokes at POST /2/auth/token/revoke with the access token as
//     bearer and no body, disabling the refresh token and its access
//     tokens; it answers 401 expired_access_token or invalid_access_token
//     to a token it no longer takes
//     (https://developers.dropbox.com/oauth-guide,
//     https://dropbox.github.io/dropbox-sdk-java/api-docs/v8.0.1/com/dropbox/core/v2/auth/DbxUserAuthRequests.html).
//   - Strava's scopes are comma-separated
//     (https://developers.strava.com/docs/authentication/): a scope
//     parameter with a space is refused.
//
// The fake's own record of live tokens (every token the OP issued, less
// those a quirk handler revoked) decides "already revoked".

// clientSecrets are the confidential clients' secrets, for revoking at the
// OP on a provider's behalf.
var clientSecrets = map[string]string{WebClient: WebSecret, GitHubClient: GitHubSecret, ServiceID: ServiceKey}

// RevokeRequest is one revocation request the OP received, as sent.
type RevokeRequest struct {
	Host, Method, Path string
	// Fields are the names of the form (or JSON) fields, sorted.
	Fields []string
	// Authorization is "none", "basic" or "bearer".
	Authorization string
}

// RevokeRequests are the revocation requests of every shape the OP
// received, in order.
func (s *Server) RevokeRequests() []RevokeRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// Live reports whether token is a token the OP issued that no revocation
// has dropped.
func (s *Server) Live(token string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.live[token]
	return ok
}

func hostOf(r *http.Request) string {
	h := r.Host
	if i := strings.LastIndexByte(h, ':'); i >= 0 && !strings.Contains(h[i:], "]") {
		h = h[:i]
	}
	return strings.ToLower(h)
}

func authKind(r *http.Request) string {
	switch a := r.Header.Get("Authorization"); {
	case strings.HasPrefix(a, "Basic "):
		return "basic"
	case strings.HasPrefix(a, "Bearer "):
		return "bearer"
	case a != "":
		return "other"
	}
	return "none"
}

// readBody reads r's body and puts it back.
func readBody(r *http.Request) []byte {
	b, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(b))
	return b
}

func (s *Server) record(r *http.Request, fields []string) {
	slices.Sort(fields)
	s.mu.Lock()
	s.requests = append(s.requests, RevokeRequest{Host: hostOf(r), Method: r.Method, Path: r.URL.Path, Fields: fields, Authorization: authKind(r)})
	s.mu.Unlock()
}

// quirk serves a request a provider's quirk decides, and reports whether
// it did; a request it adjusts but does not answer goes on to the OP.
func (s *Server) quirk(w http.ResponseWriter, r *http.Request, next http.Handler) bool {
	host := hostOf(r)
	revocation := (host == twitchIDHost && r.URL.Path == "/oauth2/revoke") ||
		(host == githubAPIHost && strings.HasPrefix(r.URL.Path, "/applications/")) ||
		(host == googleToken && r.URL.Path == "/revoke") ||
		(host == dropboxAPI && r.URL.Path == "/2/auth/token/revoke")
	if f := s.fault.Load(); f != nil && revocation {
		(*f)(w, r)
		return true
	}
	switch {
	case host == twitchIDHost && r.Method == http.MethodPost && r.URL.Path == "/oauth2/revoke":
		s.twitchRevoke(w, r, next)
		return true
	case host == githubAPIHost && r.Method == http.MethodDelete && strings.HasPrefix(r.URL.Path, "/applications/"):
		s.githubGrant(w, r, next)
		return true
	case host == dropboxAPI && r.Method == http.MethodPost && r.URL.Path == "/2/auth/token/revoke":
		s.dropboxRevoke(w, r, next)
		return true
	case host == googleToken && r.Method == http.MethodPost && r.URL.Path == "/revoke":
		form, _ := url.ParseQuery(string(readBody(r)))
		if !s.Live(form.Get("token")) {
			s.record(r, keys(form))
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": "invalid_token", "error_description": "Token expired or revoked"})
			return true
		}
		s.drop(form.Get("token"))
	case host == stravaHost && r.URL.Path == "/oauth/authorize":
		q := r.URL.Query()
		if strings.Contains(q.Get("scope"), " ") {
			writeJSON(w, http.StatusBadRequest, map[string]any{"message": "Bad Request", "errors": []any{map[string]string{"field": "scope", "code": "invalid"}}})
			return true
		}
		q.Set("scope", strings.ReplaceAll(q.Get("scope"), ",", " "))
		r.URL.RawQuery = q.Encode()
	}
	return false
}

func keys(v url.Values) []string {
	var out []string
	for k := range v {
		out = append(out, k)
	}
	return out
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// twitchRevoke is Twitch's POST /oauth2/revoke.
func (s *Server) twitchRevoke(w http.ResponseWriter, r *http.Request, next http.Handler) {
	form, _ := url.ParseQuery(string(readBody(r)))
	fields := keys(form)
	s.record(r, fields)
	s.mu.Lock()
	s.revoked = append(s.revoked, form.Get("token_type_hint"))
	s.mu.Unlock()
	slices.Sort(fields)
	if !slices.Equal(fields, []string{"client_id", "token"}) || r.Header.Get("Authorization") != "" {
		writeJSON(w, http.StatusBadRequest, map[string]any{"status": 400, "message": "only client_id and token are expected"})
		return
	}
	id, token := form.Get("client_id"), form.Get("token")
	if _, known := clientSecrets[id]; !known && id != NativeClient && id != ShortClient {
		writeJSON(w, http.StatusNotFound, map[string]any{"status": 404, "message": "client does not exist"})
		return
	}
	s.mu.Lock()
	owner, live := s.live[token]
	s.mu.Unlock()
	if !live || owner != id {
		writeJSON(w, http.StatusBadRequest, map[string]any{"status": 400, "message": "Invalid token"})
		return
	}
	s.revokeAtOP(next, r, token, id)
	w.WriteHeader(http.StatusOK)
}

// githubGrant is GitHub's DELETE /applications/{client_id}/grant.
func (s *Server) githubGrant(w http.ResponseWriter, r *http.Request, next http.Handler) {
	var body map[string]string
	b := readBody(r)
	json.Unmarshal(b, &body)
	var fields []string
	for k := range body {
		fields = append(fields, k)
	}
	s.record(r, fields)
	id := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/applications/"), "/grant")
	user, pass, ok := r.BasicAuth()
	if !ok || user != id || id != GitHubClient || pass != GitHubSecret || !strings.HasSuffix(r.URL.Path, "/grant") {
		writeJSON(w, http.StatusNotFound, map[string]any{"message": "Not Found"})
		return
	}
	token := body["access_token"]
	s.mu.Lock()
	owner, live := s.live[token]
	var all []string
	for t, o := range s.live {
		if o == id {
			all = append(all, t)
		}
	}
	s.mu.Unlock()
	if !live || owner != id {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"message": "Validation Failed"})
		return
	}
	// Deleting the grant deletes every token of the app for the user (the
	// OP has one user).
	for _, t := range all {
		s.revokeAtOP(next, r, t, id)
	}
	w.WriteHeader(http.StatusNoContent)
}

// Expire makes a live token one the provider refuses as expired, the way
// a short-lived Dropbox access token is after four hours.
func (s *Server) Expire(token string) {
	s.mu.Lock()
	s.expired[token] = true
	s.mu.Unlock()
}

// dropboxRevoke is Dropbox's POST /2/auth/token/revoke.
func (s *Server) dropboxRevoke(w http.ResponseWriter, r *http.Request, next http.Handler) {
	var fields []string
	if b := readBody(r); len(b) > 0 {
		fields = []string{"(body)"}
	}
	s.record(r, fields)
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	s.mu.Lock()
	owner, live := s.live[token]
	expired := s.expired[token]
	var all []string
	for t, o := range s.live {
		if o == owner {
			all = append(all, t)
		}
	}
	s.mu.Unlock()
	dropboxError := func(tag string) {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"error_summary": tag + "/", "error": map[string]string{".tag": tag}})
	}
	switch {
	case !ok || !live:
		dropboxError("invalid_access_token")
		return
	case expired:
		dropboxError("expired_access_token")
		return
	}
	for _, t := range all {
		s.revokeAtOP(next, r, t, owner)
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, "null")
}

// drop forgets a live token.
func (s *Server) drop(token string) {
	s.mu.Lock()
	delete(s.live, token)
	s.mu.Unlock()
}

// revokeAtOP drops token from the live set and revokes it at the OP on the
// provider's behalf, with the client's own credentials.
func (s *Server) revokeAtOP(next http.Handler, r *http.Request, token, clientID string) {
	s.drop(token)
	form := url.Values{"token": {token}, "client_id": {clientID}}
	if sec, ok := clientSecrets[clientID]; ok {
		form.Set("client_secret", sec)
	}
	req := httptest.NewRequestWithContext(r.Context(), http.MethodPost, "/revoke", strings.NewReader(form.Encode()))
	req.Host = r.Host
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	next.ServeHTTP(httptest.NewRecorder(), req)
}

// token serves a token POST at the OP, records the tokens it issues as
// live, and answers as the provider does: form-encoded from GitHub unless
// the request asked for JSON.
func (s *Server) token(w http.ResponseWriter, r *http.Request, next http.Handler) {
	form, _ := url.ParseQuery(string(readBody(r)))
	id := form.Get("client_id")
	if u, _, ok := r.BasicAuth(); ok {
		if dec, err := url.QueryUnescape(u); err == nil {
			u = dec
		}
		id = u
	}
	rec := httptest.NewRecorder()
	next.ServeHTTP(rec, r)
	var tok map[string]any
	if rec.Code == http.StatusOK && json.Unmarshal(rec.Body.Bytes(), &tok) == nil {
		s.mu.Lock()
		for _, k := range []string{"access_token", "refresh_token"} {
			if v, ok := tok[k].(string); ok && v != "" {
				s.live[v] = id
			}
		}
		s.mu.Unlock()
	}
	if hostOf(r) == githubHost && tok != nil && !strings.Contains(r.Header.Get("Accept"), "application/json") {
		v := url.Values{}
		for k, x := range tok {
			switch x := x.(type) {
			case string:
				v.Set(k, x)
			case float64:
				v.Set(k, strconv.FormatFloat(x, 'f', -1, 64))
			}
		}
		w.Header().Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
		w.WriteHeader(rec.Code)
		io.WriteString(w, v.Encode())
		return
	}
	for k, vs := range rec.Header() {
		w.Header()[k] = vs
	}
	w.WriteHeader(rec.Code)
	w.Write(rec.Body.Bytes())
}
