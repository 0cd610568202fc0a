package fetch

import (
	"context"
	"errors"
	"net/url"
	"strings"

	"github.com/snug/snugd/daemon/errcode"
	"github.com/snug/snugd/daemon/registry"
	"github.com/snug/snugd/daemon/requirement"
	"github.com/snug/snugd/daemon/template"
)

// Gate 8's credential sources. Injection asks the source of the grant's
// kind; a new kind of credential is a new source here, never a new branch
// in the gates. Every source ends with the row's templates (render), so a
// header or query template works beside any credential.
//
// Today: templateSource (api_key, bearer_token, basic_auth, none),
// oauthSource (the two OAuth kinds: the bearer from Config.Tokens) and
// helperSource (linked_device: the helper token from the slot's
// credential slice when the request departs to a helper). The OAuth
// refresher and the helper supervisor plug in behind Config.Tokens and
// Config.LocalTransports; a source needs nothing else.

// A credentialSource injects one kind's credential into f at gate 8: it
// sets headers on f.header, places query credentials on f.sendURL (through
// render) and adds every injected value to f.scrub. values is the slot's
// one credential read: nil when the row injects nothing and its transport
// needs no state. An error ends the request; its message is a fixed
// sentence.
type credentialSource interface {
	inject(ctx context.Context, e *Executor, f *Fetch, values map[string]string) *errcode.Error
}

// credentialSources maps each kind to its source (templateSource for the
// kinds without an entry).
func credentialSources(tokens TokenSource) map[requirement.Kind]credentialSource {
	oauth := oauthSource{tokens}
	return map[requirement.Kind]credentialSource{
		requirement.KindOAuth2ClientCreds: oauth,
		requirement.KindOAuth2AuthCode:    oauth,
		requirement.KindLinkedDevice:      helperSource{},
	}
}

// sourceFor returns the credential source of kind k.
func (e *Executor) sourceFor(k requirement.Kind) credentialSource {
	if s, ok := e.sources[k]; ok {
		return s
	}
	return templateSource{}
}

// Gate 8: injection, per kind. The slot's credential slice is read once,
// here, when the row injects anything or its transport needs the slot's
// state (the LAN pin, the helper token); none reads no credential. Query
// credentials are placed only now, after the ceiling decision, and the
// final URL is re-checked against the ceiling.
//
// A LAN request reads the slot's state for the device's pin. Once a pin
// is recorded, every later request verifies against it, so plain
// http, which cannot, is refused: gate 4's http admission is for a device
// that was never paired over TLS, not a way around its pin.
func (e *Executor) inject(ctx context.Context, f *Fetch) *errcode.Error {
	g := f.Grant
	var values map[string]string
	if g.Injects || f.via.needsState() {
		var err *errcode.Error
		if values, err = e.credentials(ctx, f); err != nil {
			return err
		}
	} else if oauthKind(g.Req.Kind) {
		// The token source reads the tokens from the slice; the
		// fields are no template's, so nothing is rendered or scrubbed.
		if err := e.readSlice(ctx, f); err != nil {
			return err
		}
	}
	if f.lan && f.Target.Scheme == "http" && f.pinned {
		return refuse(errcode.NetSchemeBlocked, "the device is paired over https, so plain http is refused")
	}
	return e.sourceFor(g.Req.Kind).inject(ctx, e, f, values)
}

// oauthKind reports whether k's bearer comes from the token source, which
// reads the slice gate 8 read.
func oauthKind(k requirement.Kind) bool {
	return k == requirement.KindOAuth2AuthCode || k == requirement.KindOAuth2ClientCreds
}

// templateSource renders the row's header and query templates.
type templateSource struct{}

func (templateSource) inject(_ context.Context, e *Executor, f *Fetch, values map[string]string) *errcode.Error {
	if f.Grant.Req.Kind == requirement.KindBasicAuth {
		// A basic_auth value held as one "user:pass" field (SimpleFIN's
		// access credentials): each long enough half is scrubbed alone.
		for _, v := range values {
			f.scrub.AddUserPass(v)
		}
	}
	return e.Render(f, values)
}

// oauthSource takes the bearer of an OAuth-kind connection from the
// TokenSource (which refreshes inside its own ceiling-checked client), then
// renders the templates.
type oauthSource struct{ tokens TokenSource }

func (s oauthSource) inject(ctx context.Context, e *Executor, f *Fetch, values map[string]string) *errcode.Error {
	if s.tokens == nil {
		return refuse(errcode.NetAuthFailed, "the connection has no token source")
	}
	tctx, cancel := context.WithTimeout(ctx, e.RequestTimeout)
	tok, err := s.tokens.AccessToken(tctx, TokenRequest{AppID: f.Call.AppID, Slot: f.Grant.Slot, Kind: f.Grant.Req.Kind, Slice: f.secrets})
	cancel()
	if err != nil || tok == "" || strings.ContainsAny(tok, "\r\n\x00") {
		// The token source's error is its own to log: its text
		// could carry what it submitted, which this gate cannot scrub.
		e.log.Warn("access token unavailable", "app", f.Call.AppID, "slot", f.Grant.Slot)
		return refuse(errcode.NetAuthFailed, "the connection could not obtain an access token")
	}
	f.scrub.Add(tok)
	setInjected(f.Header, "Authorization", "Bearer "+tok)
	return e.Render(f, values)
}

// helperSource gives a request departing to a local helper the helper
// token, the value of the field the registry's device-link pairing seat
// names (the field the link committed it to), then renders the templates.
// A row whose requirement binds no device-link entry has no helper token.
// A linked_device request to any other host gets the templates alone.
type helperSource struct{ reg *registry.Registry }

func (s helperSource) inject(_ context.Context, e *Executor, f *Fetch, values map[string]string) *errcode.Error {
	if _, ok := f.via.(helperTransport); ok {
		if s.reg != nil {
			if p, ok := s.reg.Pairing(f.Grant.Req); ok && p.Family == registry.FamilyDeviceLink && p.HelperID == f.Sidecar {
				f.token = values[p.Field]
			}
		}
		if f.token == "" {
			return refuse(errcode.NetAuthFailed, "the connection has no helper token")
		}
	}
	return e.Render(f, values)
}

// render runs the row's templates over f's request, sets the rendered
// headers and places the query credentials onto sendURL, re-checked
// against the ceiling.
func (e *Executor) Render(f *Fetch, values map[string]string) *errcode.Error {
	f.SendURL = f.Target
	if !f.Grant.Injects {
		return nil
	}
	out, err := f.Grant.Templates.Render(values, template.Request{
		Method:       f.Req.Method,
		URL:          f.Target.String(),
		PathAndQuery: f.Target.RequestURI(),
		Body:         f.Req.Body,
	}, template.Env{Now: e.now})
	if err != nil {
		// The error names seats and field keys, never a value.
		e.log.Warn("render credential template", "app", f.Call.AppID, "slot", f.Grant.Slot, "err", err)
		if errors.Is(err, template.ErrMissingValue) {
			return refuse(errcode.NetAuthFailed, "the connection is missing a credential value")
		}
		return refuse(errcode.NetAuthFailed, "the connection's credential template could not be rendered")
	}
	f.scrub.Add(out.Secrets...)
	for _, p := range out.Headers {
		setInjected(f.Header, p.Name, p.Value)
	}
	if len(out.Query) == 0 {
		return nil
	}
	placed, err := template.PlaceQuery(f.Target.String(), out.Query)
	if err != nil {
		return refuse(errcode.NetFetchFailed, "the credential query could not be placed")
	}
	u, err := url.Parse(placed)
	if err != nil || u.Scheme != f.Target.Scheme || u.Host != f.Target.Host || u.User != nil {
		return refuse(errcode.NetHostBlocked, "the credentialed url leaves the ceiling")
	}
	if h, ok := RequestHost(u); !ok || h != f.Host || !f.Grant.InCeiling(h) {
		return refuse(errcode.NetHostBlocked, "the credentialed url leaves the ceiling")
	}
	f.SendURL = u
	return nil
}
