package api

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/snug/snugd/daemon/errcode"
	"github.com/snug/snugd/daemon/pairing"
)

// The exchange pairing family's routes (Philips Hue):
// discover bridges, collect one's address, probe its certificate, pair.
// Every refusal of the network half is LAN_REFUSED with one of lan's fixed
// sentences; nothing a device said is ever echoed beyond the bounded,
// printable discovery fields.

// LANDiscoverRequest is the optional body of POST /v1/lan/discover.
type LANDiscoverRequest struct {
	// TimeoutMS is how long to listen, in milliseconds: 0 means 3000; at
	// most 10000.
	TimeoutMS int `json:"timeoutMs,omitempty"`
}

// LANBridgeJSON is one bridge a discovery heard. Every field is the
// bridge's claim; only the pin proves anything.
type LANBridgeJSON struct {
	ID         string `json:"id"`
	Address    string `json:"address"`
	Port       int    `json:"port"`
	Name       string `json:"name"`
	ModelID    string `json:"modelId"`
	Selectable bool   `json:"selectable"`
	Reason     string `json:"reason,omitempty"`

	// Conflicts lists every address at which a device claimed this
	// entry's bridge id or name, when more than one did: the entry is not
	// selectable, and the reason names them.
	Conflicts []string `json:"conflicts,omitempty"`
}

// LANDiscoverResponse answers POST /v1/lan/discover.
type LANDiscoverResponse struct {
	Bridges []LANBridgeJSON `json:"bridges"`

	// LimitReached says more than 16 devices answered with an entry that
	// could be chosen: the later ones' entries are not listed (their
	// claims still mark conflicts).
	LimitReached bool `json:"limitReached,omitempty"`

	// Truncated says answers were heard and not listed: a device
	// announced more than eight services, or more answers that cannot be
	// chosen arrived than the limit.
	Truncated bool `json:"truncated,omitempty"`
}

// LANAddressRequest is the body of POST …/{slot}/lan/address.
type LANAddressRequest struct {
	Address string `json:"address"`
}

// LANProbeJSON answers POST …/{slot}/lan/probe: the bridge at the frozen
// address and the certificate it presents now, beside the pin held.
type LANProbeJSON struct {
	BridgeID            string `json:"bridgeId"`
	ModelID             string `json:"modelId"`
	Name                string `json:"name"`
	Fingerprint         string `json:"fingerprint"`
	CN                  string `json:"cn,omitempty"`
	PreviousFingerprint string `json:"previousFingerprint,omitempty"`
}

// LANPairRequest is the optional body of POST …/{slot}/lan/pair. A row
// that holds a pin is re-paired only with repin and the new certificate's
// fingerprint the person accepted (from the probe).
type LANPairRequest struct {
	Repin       bool   `json:"repin,omitempty"`
	Fingerprint string `json:"fingerprint,omitempty"`
}

// maxDiscoverMS bounds timeoutMs.
const maxDiscoverMS = 10_000

// lanDiscover is POST /v1/lan/discover: it names no app (scopeNone).
func (s *Server) lanDiscover(c echo.Context) error {
	var req LANDiscoverRequest
	if err := bindOptional(c, &req); err != nil {
		return err
	}
	if req.TimeoutMS < 0 || req.TimeoutMS > maxDiscoverMS {
		return errcode.New(errcode.BadRequest, "timeoutMs must be 0 to 10000")
	}
	found, err := s.devices.DiscoverLAN(c.Request().Context(), time.Duration(req.TimeoutMS)*time.Millisecond)
	if err != nil {
		return err
	}
	out := LANDiscoverResponse{Bridges: make([]LANBridgeJSON, 0, len(found.Bridges)), LimitReached: found.LimitReached, Truncated: found.Truncated}
	for _, b := range found.Bridges {
		out.Bridges = append(out.Bridges, LANBridgeJSON{ID: b.BridgeID, Address: b.Address, Port: b.Port, Name: b.Name,
			ModelID: b.ModelID, Selectable: b.Selectable, Reason: b.Reason, Conflicts: b.Conflicts})
	}
	return c.JSON(http.StatusOK, out)
}

// lanAddress is POST …/{slot}/lan/address: the collected address, written
// as the row's post-collection shape (staged on an approved row).
func (s *Server) lanAddress(c echo.Context) error {
	var req LANAddressRequest
	if err := bind(c, &req); err != nil {
		return err
	}
	r, err := s.devices.CollectLANAddress(c.Request().Context(), param(c, "appId"), param(c, "slot"), req.Address)
	return s.proposal(c, r, err)
}

// lanProbe is POST …/{slot}/lan/probe: the verify probe at the frozen
// address, storing nothing.
func (s *Server) lanProbe(c echo.Context) error {
	p, err := s.devices.ProbeLAN(c.Request().Context(), param(c, "appId"), param(c, "slot"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, LANProbeJSON{BridgeID: p.BridgeID, ModelID: p.ModelID, Name: p.Name,
		Fingerprint: p.Fingerprint, CN: p.CN, PreviousFingerprint: p.PreviousFingerprint})
}

// lanPair is POST …/{slot}/lan/pair: it starts the lan-pair flow and
// answers it at once (202); GET /v1/flows/{flowId} follows it.
func (s *Server) lanPair(c echo.Context) error {
	var req LANPairRequest
	if err := bindOptional(c, &req); err != nil {
		return err
	}
	f, err := s.devices.PairLAN(c.Request().Context(), param(c, "appId"), param(c, "slot"),
		pairing.LANPairOptions{Repin: req.Repin, Accept: req.Fingerprint})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, flowJSON(f))
}

// BrowseLAN calls POST /v1/lan/discover and returns the whole answer,
// the notes on the limit included.
func (c *Client) BrowseLAN(ctx context.Context, timeout time.Duration) (LANDiscoverResponse, error) {
	var out LANDiscoverResponse
	err := c.do(ctx, http.MethodPost, "/v1/lan/discover", LANDiscoverRequest{TimeoutMS: int(timeout / time.Millisecond)}, &out)
	return out, err
}

// CollectLANAddress calls POST …/{slot}/lan/address.
func (c *Client) CollectLANAddress(ctx context.Context, appID, slot, address string) (ProposalJSON, error) {
	var out ProposalResponse
	err := c.do(ctx, http.MethodPost, connPath(appID, slot)+"/lan/address", LANAddressRequest{Address: address}, &out)
	return out.Proposal, err
}

// ProbeLAN calls POST …/{slot}/lan/probe.
func (c *Client) ProbeLAN(ctx context.Context, appID, slot string) (LANProbeJSON, error) {
	var out LANProbeJSON
	err := c.do(ctx, http.MethodPost, connPath(appID, slot)+"/lan/probe", struct{}{}, &out)
	return out, err
}

// PairLAN calls POST …/{slot}/lan/pair and returns the flow it started.
func (c *Client) PairLAN(ctx context.Context, appID, slot string, req LANPairRequest) (FlowJSON, error) {
	var out FlowJSON
	err := c.do(ctx, http.MethodPost, connPath(appID, slot)+"/lan/pair", req, &out)
	return out, err
}

// LANPairFlow calls GET /v1/flows/{flowId} for a pairing flow.
func (c *Client) LANPairFlow(ctx context.Context, flowID string) (FlowJSON, error) {
	var out FlowJSON
	err := c.do(ctx, http.MethodGet, "/v1/flows/"+url.PathEscape(flowID), nil, &out)
	return out, err
}
