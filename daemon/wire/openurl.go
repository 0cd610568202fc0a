package wire

// The statuses of snug:open-url-result.
const (
	OpenURLOpened   = "opened"
	OpenURLDeclined = "declined"
	OpenURLRefused  = "refused"
)

// OpenURLResult is snug:open-url-result: the host's answer to an
// open-url-request.
type OpenURLResult struct {
	RequestID string
	Status    string // opened, declined or refused
	Reason    string // optional, at most 300 characters
}

// FrameType returns TypeOpenURLResult.
func (OpenURLResult) FrameType() string { return TypeOpenURLResult }

// MarshalJSON writes the frame with type and v: 1.
func (r OpenURLResult) MarshalJSON() ([]byte, error) {
	return marshal(struct {
		Type      string `json:"type"`
		V         int    `json:"v"`
		RequestID string `json:"requestId"`
		Status    string `json:"status"`
		Reason    string `json:"reason,omitempty"`
	}{TypeOpenURLResult, protocolVersion, r.RequestID, r.Status, r.Reason})
}

// Validate reports whether r has a known status and a reason within its cap.
func (r OpenURLResult) Validate() error { return validationError(TypeOpenURLResult, r.problem()) }

func (r OpenURLResult) problem() string {
	if p := checkLen("requestId", r.RequestID, 1, MaxIDChars); p != "" {
		return p
	}
	switch r.Status {
	case OpenURLOpened, OpenURLDeclined, OpenURLRefused:
	default:
		return "status must be opened, declined or refused"
	}
	return checkLen("reason", r.Reason, 0, maxReasonChars)
}
