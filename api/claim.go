package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/snug/snugd/daemon/claim"
	"github.com/snug/snugd/daemon/errcode"
	"github.com/snug/snugd/daemon/pairing"
)

// ClaimRequest is the body of POST …/{slot}/claim: the SimpleFIN setup
// token exactly as the user pasted it, and replace, which a connection
// that already holds working credentials needs (else ALREADY_CONNECTED,
// the token unused).
type ClaimRequest struct {
	SetupToken string `json:"setupToken"`
	Replace    bool   `json:"replace,omitempty"`
}

// errClaimBody is the one refusal of a claim body that does not decode:
// a decoder's own message could quote a character of the token.
var errClaimBody = errcode.New(errcode.BadRequest, `the body must be {"setupToken": "…"}`)

// claim runs the token-claim ceremony (POST …/{slot}/claim) and answers
// the connection with its state (connected, claimVerifiedAt set). A
// refusal is CLAIM_REFUSED with one of the fixed sentences and its reason
// as the one detail {"path": "setupToken", "rule": REASON}; nothing of the
// token is ever echoed.
func (s *Server) claim(c echo.Context) error {
	var req ClaimRequest
	body, err := io.ReadAll(c.Request().Body)
	if err != nil {
		return bodyError(err)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if dec.Decode(&req) != nil || dec.More() || req.SetupToken == "" {
		return errClaimBody
	}
	ctx := c.Request().Context()
	row, err := s.ceremonies.ClaimSetupToken(ctx, param(c, "appId"), param(c, "slot"), req.SetupToken, req.Replace)
	if ce, ok := errors.AsType[*pairing.ClaimRefusedError](err); ok {
		a := apiRefusal(errcode.ClaimRefused, ce.Error())
		a.body.Error.Details = []Detail{{Path: "setupToken", Rule: string(ce.Reason)}}
		// CLAIM_REFUSED is not retryable, save for an unreachable
		// bridge: the token was not used, and the same request may
		// succeed once the bridge answers (its sentence says try again).
		a.body.Error.Retryable = ce.Reason == claim.ReasonUnreachable
		return a
	}
	if err != nil {
		return err
	}
	j, err := s.connectionJSON(ctx, row)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, ConnectionResponse{Connection: j})
}
