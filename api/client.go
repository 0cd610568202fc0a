package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync"

	"github.com/snug/snugd/daemon/errcode"
)

// Client is the typed client of the API that snugd ctl uses over the ctl
// socket (DialCtl). The api tests also drive it over TCP as a paired host
// would (NewClient and the host's calls, in client_host_test.go). Every
// method returns an *Error for an API refusal and an error wrapping
// ErrUnreachable when snugd does not answer.
//
// Safe for concurrent use.
type Client struct {
	base   string // "http://snugd" on the socket
	token  string
	origin string
	hc     *http.Client
	opts   ClientOptions
	warned sync.Once
}

// ClientOptions configures a Client. Every zero value is documented.
type ClientOptions struct {
	// Version is the client's own version. When the daemon's Snugd-Version
	// differs, OnVersionMismatch is called, once per Client. "" turns the
	// comparison off.
	Version string
	// OnVersionMismatch is told the daemon's and the client's versions.
	// snugd ctl prints a warning; nil ignores a mismatch.
	OnVersionMismatch func(daemonVersion, clientVersion string)
	// Token is the host token sent as a bearer token (TCP only).
	Token string
	// Origin is sent as the Origin header (TCP only), as a browser host's
	// requests carry it.
	Origin string
	// HTTPClient overrides the transport; nil builds one for the socket
	// or for TCP.
	HTTPClient *http.Client
}

// ErrUnreachable is wrapped by every error of a call snugd did not answer:
// it is not running, or its socket is not where the client looked.
var ErrUnreachable = errors.New("snugd is not answering")

// ErrUnsafeSocket is wrapped by the error of a ctl call refused before
// anything was sent: the socket or its data directory is not root's or
// the caller's, or others may write the directory (checkCtlSocket).
var ErrUnsafeSocket = errors.New("refusing the ctl socket")

// Error is an API refusal: the HTTP status and the error body.
type Error struct {
	Status    int
	Code      errcode.Code
	Message   string
	Retryable bool
	Details   []Detail
}

func (e *Error) Error() string { return fmt.Sprintf("%s: %s", e.Code, e.Message) }

// ErrorCode reports the refusal's code, so errcode.CodeOf and errors.Is
// with a Code work on it.
func (e *Error) ErrorCode() errcode.Code { return e.Code }

// Is reports whether target is the refusal's code.
func (e *Error) Is(target error) bool { return target == e.Code }

// DialCtl returns a Client for the daemon whose data directory is dataDir,
// over its ctl socket. It connects on each call, not now.
func DialCtl(dataDir string, opts ClientOptions) *Client {
	socket := filepath.Join(dataDir, CtlSocket)
	hc := opts.HTTPClient
	if hc == nil {
		hc = &http.Client{Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				if err := checkCtlSocket(socket); err != nil {
					return nil, err
				}
				var d net.Dialer
				conn, err := d.DialContext(ctx, "unix", socket)
				if err != nil {
					return nil, err
				}
				// The listener must be root's or ours, as the socket file
				// is: a socket file swapped after the check is caught here.
				if err := checkPeer(conn); err != nil {
					conn.Close()
					return nil, fmt.Errorf("%w: %v", ErrUnsafeSocket, err)
				}
				return conn, nil
			},
			DisableCompression: true,
		}}
	}
	return &Client{base: "http://snugd", hc: hc, opts: opts}
}

// do sends one request and decodes a JSON answer into out (nil: none
// expected).
func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	resp, err := c.send(ctx, method, path, in, "application/json")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil || resp.StatusCode == http.StatusNoContent {
		io.Copy(io.Discard, resp.Body)
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("%s %s: decode the answer: %w", method, path, err)
	}
	return nil
}

// send sends a request and returns a 2xx response; any other status
// becomes an *Error.
func (c *Client) send(ctx context.Context, method, path string, in any, contentType string) (*http.Response, error) {
	var body io.Reader
	switch v := in.(type) {
	case nil:
	case io.Reader:
		body = v
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Accept", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if c.origin != "" {
		req.Header.Set("Origin", c.origin)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if errors.Is(err, ErrUnsafeSocket) {
			var ue *url.Error
			if errors.As(err, &ue) {
				err = ue.Err // the refusal itself, without the request line
			}
			return nil, err
		}
		return nil, fmt.Errorf("%w: %v", ErrUnreachable, err)
	}
	c.checkVersion(resp.Header.Get("Snugd-Version"))
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	var e errorJSON
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&e); err != nil || e.Error.Code == "" {
		return nil, &Error{Status: resp.StatusCode, Code: errcode.Internal, Message: fmt.Sprintf("HTTP %d without an error body", resp.StatusCode)}
	}
	return nil, &Error{Status: resp.StatusCode, Code: e.Error.Code, Message: e.Error.Message, Retryable: e.Error.Retryable, Details: e.Error.Details}
}

func (c *Client) checkVersion(daemonVersion string) {
	if c.opts.Version == "" || c.opts.OnVersionMismatch == nil || daemonVersion == "" || daemonVersion == c.opts.Version {
		return
	}
	c.warned.Do(func() { c.opts.OnVersionMismatch(daemonVersion, c.opts.Version) })
}

// esc escapes one path segment.
func esc(s string) string { return url.PathEscape(s) }

// Status calls GET /v1/status.
func (c *Client) Status(ctx context.Context) (StatusResponse, error) {
	var out StatusResponse
	return out, c.do(ctx, http.MethodGet, "/v1/status", nil, &out)
}

// Hosts calls GET /v1/hosts (ctl).
func (c *Client) Hosts(ctx context.Context) (HostsResponse, error) {
	var out HostsResponse
	return out, c.do(ctx, http.MethodGet, "/v1/hosts", nil, &out)
}

// ApproveHost calls POST /v1/hosts/approve (ctl).
func (c *Client) ApproveHost(ctx context.Context, code string) (PairingJSON, error) {
	var out DecisionResponse
	err := c.do(ctx, http.MethodPost, "/v1/hosts/approve", CodeRequest{Code: code}, &out)
	return out.Pairing, err
}

// InviteHost calls POST /v1/hosts/invite (ctl): a pairing invitation for
// the desktop host name.
func (c *Client) InviteHost(ctx context.Context, name string) (InviteResponse, error) {
	var out InviteResponse
	return out, c.do(ctx, http.MethodPost, "/v1/hosts/invite", InviteRequest{Name: name}, &out)
}

// DenyHost calls POST /v1/hosts/deny (ctl).
func (c *Client) DenyHost(ctx context.Context, code string) (PairingJSON, error) {
	var out DecisionResponse
	err := c.do(ctx, http.MethodPost, "/v1/hosts/deny", CodeRequest{Code: code}, &out)
	return out.Pairing, err
}

// DeleteHost calls DELETE /v1/hosts/{hostId} (ctl).
func (c *Client) DeleteHost(ctx context.Context, hostID string) error {
	return c.do(ctx, http.MethodDelete, "/v1/hosts/"+esc(hostID), nil, &DeletedResponse{})
}

// Connections calls GET /v1/apps/{appId}/connections.
func (c *Client) Connections(ctx context.Context, appID string) ([]ConnectionJSON, error) {
	var out ConnectionsResponse
	err := c.do(ctx, http.MethodGet, "/v1/apps/"+esc(appID)+"/connections", nil, &out)
	return out.Connections, err
}

func (c *Client) writer(ctx context.Context, appID, slot, act string) (ConnectionJSON, error) {
	var out ConnectionResponse
	err := c.do(ctx, http.MethodPost, connPath(appID, slot)+"/"+act, nil, &out)
	return out.Connection, err
}

// ApproveReview calls POST …/{slot}/approve bound to the review with
// reviewToken: 409 REVIEW_STALE when the row changed since.
func (c *Client) ApproveReview(ctx context.Context, appID, slot, reviewToken string) (ConnectionJSON, error) {
	var out ConnectionResponse
	err := c.do(ctx, http.MethodPost, connPath(appID, slot)+"/approve", ApproveRequest{ReviewToken: reviewToken}, &out)
	return out.Connection, err
}

// ReapproveReview calls POST …/{slot}/reapprove bound to the review with
// reviewToken, as ApproveReview does.
func (c *Client) ReapproveReview(ctx context.Context, appID, slot, reviewToken string) (ConnectionJSON, error) {
	var out ConnectionResponse
	err := c.do(ctx, http.MethodPost, connPath(appID, slot)+"/reapprove", ApproveRequest{ReviewToken: reviewToken}, &out)
	return out.Connection, err
}

// ShareApp calls POST /v1/apps/{appId}/shares (ctl).
func (c *Client) ShareApp(ctx context.Context, appID, hostID string) (AccessResponse, error) {
	var out AccessResponse
	return out, c.do(ctx, http.MethodPost, "/v1/apps/"+esc(appID)+"/shares", ShareRequest{HostID: hostID}, &out)
}

// UnshareApp calls DELETE /v1/apps/{appId}/shares/{hostId} (ctl).
func (c *Client) UnshareApp(ctx context.Context, appID, hostID string) (AccessResponse, error) {
	var out AccessResponse
	return out, c.do(ctx, http.MethodDelete, "/v1/apps/"+esc(appID)+"/shares/"+esc(hostID), nil, &out)
}

// Revoke calls POST …/{slot}/revoke and answers the whole RevokeResponse:
// the row, and remoteRevocation when an OAuth provider did not confirm the
// RFC 7009 revocation (the local wipe happened anyway).
func (c *Client) Revoke(ctx context.Context, appID, slot string) (RevokeResponse, error) {
	var out RevokeResponse
	err := c.do(ctx, http.MethodPost, connPath(appID, slot)+"/revoke", nil, &out)
	return out, err
}

// Reconnect calls POST …/{slot}/reconnect.
func (c *Client) Reconnect(ctx context.Context, appID, slot string) (ConnectionJSON, error) {
	return c.writer(ctx, appID, slot, "reconnect")
}

// SetCredentials calls PUT …/{slot}/credentials. The values are sent once
// and never come back.
func (c *Client) SetCredentials(ctx context.Context, appID, slot string, fields map[string]string) error {
	return c.do(ctx, http.MethodPut, connPath(appID, slot)+"/credentials", CredentialsRequest{Fields: fields}, nil)
}

// Claim calls POST …/{slot}/claim with a SimpleFIN setup token and
// returns the connection once its credentials are stored. A refusal is an
// *Error with code CLAIM_REFUSED, a fixed sentence and the reason as its
// one detail. A connection that holds working credentials claims again
// only with replace (else ALREADY_CONNECTED, the token unused).
func (c *Client) Claim(ctx context.Context, appID, slot, setupToken string, replace bool) (ConnectionJSON, error) {
	var out ConnectionResponse
	err := c.do(ctx, http.MethodPost, connPath(appID, slot)+"/claim", ClaimRequest{SetupToken: setupToken, Replace: replace}, &out)
	return out.Connection, err
}

// StartLink calls POST …/{slot}/link/start and returns the device-link
// flow as it stands. A linked slot is relinked only with replace (else
// ALREADY_CONNECTED).
func (c *Client) StartLink(ctx context.Context, appID, slot string, replace bool) (FlowJSON, error) {
	var out LinkStartResponse
	err := c.do(ctx, http.MethodPost, connPath(appID, slot)+"/link/start", LinkStartRequest{Replace: replace}, &out)
	return out.Flow, err
}

// Flow calls GET /v1/flows/{flowId}.
func (c *Client) Flow(ctx context.Context, flowID string) (FlowJSON, error) {
	var out FlowJSON
	err := c.do(ctx, http.MethodGet, "/v1/flows/"+esc(flowID), nil, &out)
	return out, err
}

// CancelFlow calls DELETE /v1/flows/{flowId} (a device-link flow).
func (c *Client) CancelFlow(ctx context.Context, flowID string) (FlowJSON, error) {
	var out FlowJSON
	err := c.do(ctx, http.MethodDelete, "/v1/flows/"+esc(flowID), nil, &out)
	return out, err
}

// Events calls GET /v1/events and calls fn with each hint until ctx is
// done, the stream ends, or fn returns an error (which Events returns). A
// stream the daemon ends (at shutdown) returns nil.
func (c *Client) Events(ctx context.Context, fn func(Event) error) error {
	resp, err := c.send(ctx, http.MethodGet, "/v1/events", nil, "")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 4096), 64<<10)
	var ev Event
	var data []byte
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if ev.Type != "" {
				if err := json.Unmarshal(data, &ev.Data); err != nil {
					return fmt.Errorf("events: %s data: %w", ev.Type, err)
				}
				if err := fn(ev); err != nil {
					return err
				}
			}
			ev, data = Event{}, nil
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "event: "):
			ev.Type = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data = append(data, strings.TrimPrefix(line, "data: ")...)
		}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return sc.Err()
}

func connPath(appID, slot string) string {
	return "/v1/apps/" + esc(appID) + "/connections/" + esc(slot)
}

// Review calls GET …/{slot}/review.
func (c *Client) Review(ctx context.Context, appID, slot string) (ReviewResponse, error) {
	var out ReviewResponse
	return out, c.do(ctx, http.MethodGet, connPath(appID, slot)+"/review", nil, &out)
}

// Export calls POST /v1/export (ctl) and copies the user DB, without
// secrets, to w.
func (c *Client) Export(ctx context.Context, w io.Writer) error {
	resp, err := c.send(ctx, http.MethodPost, "/v1/export", nil, "")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.Copy(w, resp.Body)
	return err
}

// Import calls POST /v1/import (ctl) with the user DB read from r and
// returns the reconciliation report.
func (c *Client) Import(ctx context.Context, r io.Reader) (ImportReportJSON, error) {
	resp, err := c.send(ctx, http.MethodPost, "/v1/import", r, sqliteType)
	if err != nil {
		return ImportReportJSON{}, err
	}
	defer resp.Body.Close()
	var out ImportReportJSON
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return ImportReportJSON{}, fmt.Errorf("import: decode the report: %w", err)
	}
	return out, nil
}

// PutConnection calls PUT /v1/apps/{appId}/connections/{slot}, the user
// channel, with requirement as its JSON: snugd ctl demo proposes its
// connection with it, and a host's calls are the same.
func (c *Client) PutConnection(ctx context.Context, appID, slot string, requirement json.RawMessage) (ProposalJSON, error) {
	var out ProposalResponse
	err := c.do(ctx, http.MethodPut, connPath(appID, slot), PutConnectionRequest{Requirement: requirement}, &out)
	return out.Proposal, err
}

// Net calls POST /v1/net (snugd ctl demo's requests; a host's the same) and returns the snug:net-response frame's bytes
// exactly as snugd wrote them. A frame snugd does not answer is an *Error
// (400 NET_INVALID_REQUEST). Cancelling ctx cancels the request in the
// executor and denies a confirm it parked.
func (c *Client) Net(ctx context.Context, req NetRequest) ([]byte, error) {
	resp, err := c.send(ctx, http.MethodPost, "/v1/net", req, "application/json")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return io.ReadAll(resp.Body)
}

// Confirms calls GET /v1/confirms.
func (c *Client) Confirms(ctx context.Context) ([]ConfirmJSON, error) {
	var out ConfirmsResponse
	err := c.do(ctx, http.MethodGet, "/v1/confirms", nil, &out)
	return out.Confirms, err
}

// DecideConfirm calls POST /v1/confirms/{id}.
func (c *Client) DecideConfirm(ctx context.Context, id string, d DecisionRequest) error {
	return c.do(ctx, http.MethodPost, "/v1/confirms/"+esc(id), d, nil)
}

// JournalOptions selects a journal page (GET /v1/journal).
type JournalOptions struct {
	AppID          string
	UnattendedOnly bool
	Before         int64  // 0: from the newest
	Limit          int    // 0: 100
	Kind           string // "acts", "requests" or "" for both
}

// Journal calls GET /v1/journal.
func (c *Client) Journal(ctx context.Context, o JournalOptions) (JournalResponse, error) {
	q := url.Values{}
	if o.AppID != "" {
		q.Set("appId", o.AppID)
	}
	if o.UnattendedOnly {
		q.Set("unattended", "true")
	}
	if o.Before != 0 {
		q.Set("before", fmt.Sprint(o.Before))
	}
	if o.Limit != 0 {
		q.Set("limit", fmt.Sprint(o.Limit))
	}
	if o.Kind != "" {
		q.Set("kind", o.Kind)
	}
	path := "/v1/journal"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var out JournalResponse
	return out, c.do(ctx, http.MethodGet, path, nil, &out)
}

// OAuthStart calls POST /v1/oauth/start: a sign-in flow for an approved
// authorization-code connection, and the URL the person opens.
func (c *Client) OAuthStart(ctx context.Context, appID, slot string, replace bool) (OAuthStartResponse, error) {
	var out OAuthStartResponse
	return out, c.do(ctx, http.MethodPost, "/v1/oauth/start", OAuthStartRequest{AppID: appID, Slot: slot, Replace: replace}, &out)
}
