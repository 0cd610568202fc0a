package api

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
)

// The host side of the typed client: the calls a paired host makes over
// TCP. snugd ctl makes none of them, so they live with the tests that
// drive the API as a host would.

// NewClient returns a Client for the API at baseURL
// ("http://127.0.0.1:4747"), authenticating with opts.Token.
func NewClient(baseURL string, opts ClientOptions) *Client {
	hc := opts.HTTPClient
	if hc == nil {
		hc = &http.Client{Transport: &http.Transport{Proxy: nil, DisableCompression: true}}
	}
	return &Client{base: strings.TrimRight(baseURL, "/"), token: opts.Token, origin: opts.Origin, hc: hc, opts: opts}
}

// Health calls GET /v1/health.
func (c *Client) Health(ctx context.Context) (Health, error) {
	var out Health
	return out, c.do(ctx, http.MethodGet, "/v1/health", nil, &out)
}

// Pair calls POST /v1/hosts/pair.
func (c *Client) Pair(ctx context.Context, req PairRequest) (PairResponse, error) {
	var out PairResponse
	return out, c.do(ctx, http.MethodPost, "/v1/hosts/pair", req, &out)
}

// Redeem calls POST /v1/hosts/pair/{pairingId}/redeem.
func (c *Client) Redeem(ctx context.Context, pairingID, verifier string) (RedeemResponse, error) {
	var out RedeemResponse
	return out, c.do(ctx, http.MethodPost, "/v1/hosts/pair/"+esc(pairingID)+"/redeem", RedeemRequest{Verifier: verifier}, &out)
}

// Approve reads the review of (appID, slot) and approves what it read
// (ApproveReview with that review's token). It shows nobody anything: a
// caller that puts the review in front of a person calls Review and
// ApproveReview itself, as snugd ctl approve does.
func (c *Client) Approve(ctx context.Context, appID, slot string) (ConnectionJSON, error) {
	rv, err := c.Review(ctx, appID, slot)
	if err != nil {
		return ConnectionJSON{}, err
	}
	return c.ApproveReview(ctx, appID, slot, rv.ReviewToken)
}

// Reapprove is Approve for a staged change (ReapproveReview).
func (c *Client) Reapprove(ctx context.Context, appID, slot string) (ConnectionJSON, error) {
	rv, err := c.Review(ctx, appID, slot)
	if err != nil {
		return ConnectionJSON{}, err
	}
	return c.ReapproveReview(ctx, appID, slot, rv.ReviewToken)
}

// AppAccess calls GET /v1/apps/{appId}/access (ctl).
func (c *Client) AppAccess(ctx context.Context, appID string) (AccessResponse, error) {
	var out AccessResponse
	return out, c.do(ctx, http.MethodGet, "/v1/apps/"+esc(appID)+"/access", nil, &out)
}

// Schemas calls GET /v1/schemas.
func (c *Client) Schemas(ctx context.Context) ([]string, error) {
	var out SchemasResponse
	err := c.do(ctx, http.MethodGet, "/v1/schemas", nil, &out)
	return out.Types, err
}

// Schema calls GET /v1/schemas/{type} and returns the schema's bytes as
// served.
func (c *Client) Schema(ctx context.Context, frameType string) ([]byte, error) {
	resp, err := c.send(ctx, http.MethodGet, "/v1/schemas/"+esc(frameType), nil, "")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return io.ReadAll(io.LimitReader(resp.Body, 4<<20))
}

// Registry calls GET /v1/registry and returns the registry document as
// served.
func (c *Client) Registry(ctx context.Context) ([]byte, error) {
	resp, err := c.send(ctx, http.MethodGet, "/v1/registry", nil, "")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return io.ReadAll(io.LimitReader(resp.Body, 4<<20))
}

// Directive calls POST /v1/apps/{appId}/directives, the assistant channel,
// with the directive's JSON; userDocs says the user supplied the docs.
func (c *Client) Directive(ctx context.Context, appID string, directive json.RawMessage, userDocs bool) (ProposalJSON, error) {
	var out ProposalResponse
	path := "/v1/apps/" + esc(appID) + "/directives"
	if userDocs {
		path += "?userDocs=true"
	}
	err := c.do(ctx, http.MethodPost, path, directive, &out)
	return out.Proposal, err
}

// Install calls POST /v1/apps/{appId}/install, the install channel.
func (c *Client) Install(ctx context.Context, appID string, req InstallRequest) ([]ProposalJSON, error) {
	var out InstallResponse
	err := c.do(ctx, http.MethodPost, "/v1/apps/"+esc(appID)+"/install", req, &out)
	return out.Proposals, err
}

// TestConnection calls POST …/{slot}/test and returns the frame's bytes.
func (c *Client) TestConnection(ctx context.Context, appID, slot string) ([]byte, error) {
	resp, err := c.send(ctx, http.MethodPost, connPath(appID, slot)+"/test", nil, "")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return io.ReadAll(resp.Body)
}

// Facts calls GET /v1/apps/{appId}/facts.
func (c *Client) Facts(ctx context.Context, appID string) ([]FactJSON, error) {
	var out FactsResponse
	err := c.do(ctx, http.MethodGet, "/v1/apps/"+esc(appID)+"/facts", nil, &out)
	return out.Facts, err
}

// Confirm calls GET /v1/confirms/{id}.
func (c *Client) Confirm(ctx context.Context, id string) (ConfirmJSON, error) {
	var out ConfirmResponse
	err := c.do(ctx, http.MethodGet, "/v1/confirms/"+esc(id), nil, &out)
	return out.Confirm, err
}

// Standings calls GET /v1/standing.
func (c *Client) Standings(ctx context.Context) ([]StandingJSON, error) {
	var out StandingsResponse
	err := c.do(ctx, http.MethodGet, "/v1/standing", nil, &out)
	return out.Standing, err
}

// ArmStanding calls POST /v1/standing.
func (c *Client) ArmStanding(ctx context.Context, req StandingRequest) (StandingJSON, error) {
	var out StandingResponse
	err := c.do(ctx, http.MethodPost, "/v1/standing", req, &out)
	return out.Standing, err
}

// KillStanding calls POST /v1/standing/kill and returns how many standing
// approvals it disarmed.
func (c *Client) KillStanding(ctx context.Context) (int, error) {
	var out KillResponse
	err := c.do(ctx, http.MethodPost, "/v1/standing/kill", nil, &out)
	return out.Disarmed, err
}

// OAuthCallback calls POST /v1/oauth/callback (the web surface) and
// returns the flow as it ended.
func (c *Client) OAuthCallback(ctx context.Context, req OAuthCallbackRequest) (FlowJSON, error) {
	var out FlowJSON
	return out, c.do(ctx, http.MethodPost, "/v1/oauth/callback", req, &out)
}
