package wire

import (
	"encoding/json"

	"github.com/snug/snugd/daemon/internal/strictjson"
)

// Moved from app.go: the parts of the frame library the
// daemon never runs, kept as the tests' oracle.

// FrameType returns TypeAppAnnounce.
func (AppAnnounce) FrameType() string { return TypeAppAnnounce }

// MarshalJSON writes the frame with type and v: 1.
func (a AppAnnounce) MarshalJSON() ([]byte, error) {
	return marshal(struct {
		Type        string `json:"type"`
		V           int    `json:"v"`
		AppID       string `json:"appId"`
		DisplayName string `json:"displayName"`
		Description string `json:"description,omitempty"`
		IconEmoji   string `json:"iconEmoji,omitempty"`
		IconColor   string `json:"iconColor,omitempty"`
	}{TypeAppAnnounce, protocolVersion, a.AppID, a.DisplayName, a.Description, a.IconEmoji, a.IconColor})
}

// Validate reports whether a's strings are within their caps.
func (a AppAnnounce) Validate() error { return validationError(TypeAppAnnounce, a.problem()) }

func (a AppAnnounce) problem() string {
	return firstProblem(
		checkLen("appId", a.AppID, 1, maxAppIDChars),
		checkLen("displayName", a.DisplayName, 0, maxDisplayNameChars),
		checkLen("description", a.Description, 0, maxDescriptionChars),
		checkLen("iconEmoji", a.IconEmoji, 0, maxIconEmojiChars),
		checkLen("iconColor", a.IconColor, 0, maxIconColorChars),
	)
}

func decodeAppAnnounce(ms []member) (AppAnnounce, error) {
	d := newDecoder(TypeAppAnnounce)
	var a AppAnnounce
	var seenApp, seenName bool
	for _, m := range ms {
		if d.common(m) {
			continue
		}
		switch string(m.key) {
		case "appId":
			a.AppID, seenApp = d.str(m, "appId"), true
		case "displayName":
			a.DisplayName, seenName = d.str(m, "displayName"), true
		case "description":
			a.Description = d.str(m, "description")
		case "iconEmoji":
			a.IconEmoji = d.str(m, "iconEmoji")
		case "iconColor":
			a.IconColor = d.str(m, "iconColor")
		}
	}
	d.require(seenApp, "appId")
	d.require(seenName, "displayName")
	return finish(a, &d)
}

// FrameType returns TypeHostReady.
func (HostReady) FrameType() string { return TypeHostReady }

// MarshalJSON writes the frame with type and v: 1. net and openUrl are
// written only when true.
func (h HostReady) MarshalJSON() ([]byte, error) {
	type caps struct {
		Streaming bool `json:"streaming"`
		DB        bool `json:"db"`
		Auth      bool `json:"auth"`
		Net       bool `json:"net,omitempty"`
		OpenURL   bool `json:"openUrl,omitempty"`
	}
	c := h.Capabilities
	return marshal(struct {
		Type             string          `json:"type"`
		V                int             `json:"v"`
		InstanceID       string          `json:"instanceId"`
		ProtocolVersions []int           `json:"protocolVersions"`
		Capabilities     caps            `json:"capabilities"`
		Theme            json.RawMessage `json:"theme"`
		Locale           string          `json:"locale,omitempty"`
	}{TypeHostReady, protocolVersion, h.InstanceID, h.ProtocolVersions, caps(c), h.Theme, h.Locale})
}

// Validate reports whether h is complete: an instanceId, at least one
// protocol version, and a theme that is a string or an object.
func (h HostReady) Validate() error { return validationError(TypeHostReady, h.problem()) }

func (h HostReady) problem() string {
	if p := checkLen("instanceId", h.InstanceID, 1, MaxIDChars); p != "" {
		return p
	}
	if len(h.ProtocolVersions) == 0 {
		return "protocolVersions must list at least one version"
	}
	for _, v := range h.ProtocolVersions {
		if v < 1 {
			return "protocolVersions must be positive integers"
		}
	}
	if k := kindOf(h.Theme); k != kindString && k != kindObject {
		return "theme must be a string or an object"
	}
	return ""
}

func decodeHostReady(ms []member) (HostReady, error) {
	d := newDecoder(TypeHostReady)
	var h HostReady
	var seenID, seenVersions, seenCaps, seenTheme bool
	for _, m := range ms {
		if d.common(m) {
			continue
		}
		switch string(m.key) {
		case "instanceId":
			h.InstanceID, seenID = d.str(m, "instanceId"), true
		case "protocolVersions":
			h.ProtocolVersions, seenVersions = d.versions(m), true
		case "capabilities":
			h.Capabilities, seenCaps = d.capabilities(m), true
		case "theme":
			h.Theme, seenTheme = d.raw(m, "theme", string([]byte{kindString, kindObject}), "a string or an object"), true
		case "locale":
			h.Locale = d.str(m, "locale")
		}
	}
	d.require(seenID, "instanceId")
	d.require(seenVersions, "protocolVersions")
	d.require(seenCaps, "capabilities")
	d.require(seenTheme, "theme")
	return finish(h, &d)
}

func (d *decoder) versions(m member) []int {
	if m.kind() != kindArray {
		d.fail("protocolVersions must be an array of integers")
		return nil
	}
	v, err := reader.Decode(m.val)
	if err != nil {
		d.fail("protocolVersions must be an array of integers")
		return nil
	}
	var out []int
	for _, item := range v.Items {
		n, ok := intValue([]byte(item.Text), 1, maxSafeInteger)
		if item.Kind != strictjson.Number || !ok {
			d.fail("protocolVersions must be positive integers")
			return nil
		}
		out = append(out, n)
	}
	return out
}

func (d *decoder) capabilities(m member) Capabilities {
	var c Capabilities
	if m.kind() != kindObject {
		d.fail("capabilities must be an object")
		return c
	}
	var seenStreaming, seenDB, seenAuth bool
	var buf [maxKnownKeys]member
	for _, e := range members(m.val, buf[:0]) {
		switch string(e.key) {
		case "streaming":
			c.Streaming, seenStreaming = d.boolean(e, "capabilities.streaming"), true
		case "db":
			c.DB, seenDB = d.boolean(e, "capabilities.db"), true
		case "auth":
			c.Auth, seenAuth = d.boolean(e, "capabilities.auth"), true
		case "net":
			c.Net = d.boolean(e, "capabilities.net")
		case "openUrl":
			c.OpenURL = d.boolean(e, "capabilities.openUrl")
		}
	}
	d.require(seenStreaming, "capabilities.streaming")
	d.require(seenDB, "capabilities.db")
	d.require(seenAuth, "capabilities.auth")
	return c
}

// FrameType returns TypeAppMessage.
func (AppMessage) FrameType() string { return TypeAppMessage }

// MarshalJSON writes the frame with type and v: 1.
func (a AppMessage) MarshalJSON() ([]byte, error) {
	return marshal(struct {
		Type           string          `json:"type"`
		V              int             `json:"v"`
		RequestID      string          `json:"requestId"`
		InstanceID     string          `json:"instanceId"`
		AppID          string          `json:"appId"`
		Action         string          `json:"action"`
		Payload        json.RawMessage `json:"payload,omitempty"`
		State          json.RawMessage `json:"state,omitempty"`
		ResponseSchema json.RawMessage `json:"responseSchema,omitempty"`
	}{TypeAppMessage, protocolVersion, a.RequestID, a.InstanceID, a.AppID, a.Action, a.Payload, a.State, a.ResponseSchema})
}

// Validate reports whether a's fields are within their limits.
func (a AppMessage) Validate() error { return validationError(TypeAppMessage, a.problem()) }

func (a AppMessage) problem() string {
	p := firstProblem(
		checkLen("requestId", a.RequestID, 1, MaxIDChars),
		checkLen("instanceId", a.InstanceID, 1, MaxIDChars),
		checkLen("appId", a.AppID, 1, maxAppIDChars),
		checkLen("action", a.Action, 1, maxActionChars),
	)
	if p != "" {
		return p
	}
	if k := kindOf(a.ResponseSchema); a.ResponseSchema != nil && k != kindObject && k != kindTrue && k != kindFalse {
		return "responseSchema must be an object or a boolean"
	}
	return ""
}

func decodeAppMessage(ms []member) (AppMessage, error) {
	d := newDecoder(TypeAppMessage)
	var a AppMessage
	var seenID, seenInstance, seenApp, seenAction bool
	for _, m := range ms {
		if d.common(m) {
			continue
		}
		switch string(m.key) {
		case "requestId":
			d.offerRequestID(m)
			a.RequestID, seenID = d.str(m, "requestId"), true
		case "instanceId":
			a.InstanceID, seenInstance = d.str(m, "instanceId"), true
		case "appId":
			a.AppID, seenApp = d.str(m, "appId"), true
		case "action":
			a.Action, seenAction = d.str(m, "action"), true
		case "payload":
			a.Payload = json.RawMessage(m.val)
		case "state":
			a.State = json.RawMessage(m.val)
		case "responseSchema":
			a.ResponseSchema = d.raw(m, "responseSchema", string([]byte{kindObject, kindTrue, kindFalse}), "an object or a boolean")
		}
	}
	d.require(seenID, "requestId")
	d.require(seenInstance, "instanceId")
	d.require(seenApp, "appId")
	d.require(seenAction, "action")
	return finish(a, &d)
}

// FrameType returns TypeAppCancel.
func (AppCancel) FrameType() string { return TypeAppCancel }

// MarshalJSON writes the frame with type and v: 1.
func (c AppCancel) MarshalJSON() ([]byte, error) {
	return marshal(struct {
		Type       string `json:"type"`
		V          int    `json:"v"`
		RequestID  string `json:"requestId"`
		InstanceID string `json:"instanceId"`
	}{TypeAppCancel, protocolVersion, c.RequestID, c.InstanceID})
}

// Validate reports whether c names a request and an instance.
func (c AppCancel) Validate() error { return validationError(TypeAppCancel, c.problem()) }

func (c AppCancel) problem() string {
	return firstProblem(
		checkLen("requestId", c.RequestID, 1, MaxIDChars),
		checkLen("instanceId", c.InstanceID, 1, MaxIDChars),
	)
}

func decodeAppCancel(ms []member) (AppCancel, error) {
	d := newDecoder(TypeAppCancel)
	var c AppCancel
	var seenID, seenInstance bool
	for _, m := range ms {
		if d.common(m) {
			continue
		}
		switch string(m.key) {
		case "requestId":
			d.offerRequestID(m)
			c.RequestID, seenID = d.str(m, "requestId"), true
		case "instanceId":
			c.InstanceID, seenInstance = d.str(m, "instanceId"), true
		}
	}
	d.require(seenID, "requestId")
	d.require(seenInstance, "instanceId")
	return finish(c, &d)
}

func decodeAppResponse(ms []member) (AppResponse, error) {
	d := newDecoder(TypeAppResponse)
	var r AppResponse
	var seenID, seenOK, seenStreaming, seenText, seenSeq, seenData, seenError bool
	for _, m := range ms {
		if d.common(m) {
			continue
		}
		switch string(m.key) {
		case "requestId":
			d.offerRequestID(m)
			r.RequestID, seenID = d.str(m, "requestId"), true
		case "ok":
			r.OK, seenOK = d.boolean(m, "ok"), true
		case "streaming":
			r.Streaming, seenStreaming = d.boolean(m, "streaming"), true
		case "text":
			r.Text, seenText = d.str(m, "text"), true
		case "seq":
			r.Seq, seenSeq = d.integer(m, "seq", 0, maxSafeInteger), true
		case "data":
			r.Data, seenData = d.raw(m, "data", string([]byte{kindObject}), "an object"), true
		case "error":
			r.Error, seenError = d.errorBody(m), true
		}
	}
	d.require(seenID, "requestId")
	d.require(seenOK, "ok")
	// Exactly one shape (R3): presence decides, so a frame holding the
	// fields of two shapes is refused rather than read as either.
	switch {
	case !r.OK:
		d.require(seenError, "error")
		if seenText || seenSeq || seenData || r.Streaming {
			d.fail("an error app-response carries error and nothing of the other shapes")
		}
	case seenError:
		d.fail("an ok app-response carries no error")
	case !seenStreaming:
		d.fail("streaming is required when ok is true")
	case r.Streaming:
		d.require(seenText, "text")
		if seenData {
			d.fail("a streaming app-response carries text, not data")
		}
	default:
		d.require(seenData, "data")
		if seenText || seenSeq {
			d.fail("a final app-response carries data, not text")
		}
	}
	return finish(r, &d)
}

// AppErrorResponse returns the terminal error app-response for err (see
// ErrorBodyOf).
func AppErrorResponse(requestID string, err error) AppResponse {
	b := ErrorBodyOf(err)
	return AppResponse{RequestID: requestID, Error: &b}
}

// AppAnnounce is snug:app-announce: the app's self-description on mount.
// It is display metadata: appId is not a security principal (R4).
type AppAnnounce struct {
	AppID       string // 1–128 characters
	DisplayName string // at most 80
	Description string // optional, at most 400
	IconEmoji   string // optional, at most 8
	IconColor   string // optional, at most 32
}

// Capabilities is snug:host-ready.capabilities. streaming, db and auth are
// always present; net and openUrl are optional additive flags, and an
// absent flag reads as false: the app renders a fallback (§2).
type Capabilities struct {
	Streaming bool
	DB        bool
	Auth      bool
	Net       bool
	OpenURL   bool
}

// HostReady is snug:host-ready, sent on iframe load and as the ack of every
// app-announce, idempotently.
type HostReady struct {
	InstanceID       string // minted by the host (R4)
	ProtocolVersions []int
	Capabilities     Capabilities
	Theme            json.RawMessage // a theme name or an object of theme values, as the host defines it
	Locale           string          // optional
}

// AppMessage is snug:app-message: an agent request from the app.
type AppMessage struct {
	RequestID      string
	InstanceID     string
	AppID          string          // display metadata, never a principal (R4)
	Action         string          // 1–128 characters
	Payload        json.RawMessage // optional, any JSON value
	State          json.RawMessage // optional, any JSON value
	ResponseSchema json.RawMessage // optional, a JSON Schema: an object or a boolean
}

// AppCancel is snug:app-cancel: abort the in-flight request RequestID.
type AppCancel struct {
	RequestID  string
	InstanceID string
}
