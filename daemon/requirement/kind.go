package requirement

import "slices"

// A Kind is a connection's auth kind. The set is append-only: a
// stored row's kind is never re-read as a different kind, so a constant is
// never renamed, reordered or reused, and widening the set is a schema
// version change made here in code, never a configuration knob.
type Kind string

// The seven kinds, in their defined order. A new kind is added
// after KindNone.
const (
	KindAPIKey            Kind = "api_key"
	KindBearerToken       Kind = "bearer_token"
	KindBasicAuth         Kind = "basic_auth"
	KindOAuth2ClientCreds Kind = "oauth2_client_creds"
	KindOAuth2AuthCode    Kind = "oauth2_auth_code"
	KindLinkedDevice      Kind = "linked_device"
	KindNone              Kind = "none"
)

// Kinds returns the seven kinds in spec order.
func Kinds() []Kind {
	return []Kind{
		KindAPIKey, KindBearerToken, KindBasicAuth, KindOAuth2ClientCreds,
		KindOAuth2AuthCode, KindLinkedDevice, KindNone,
	}
}

// Valid reports whether k is one of the seven kinds.
func (k Kind) Valid() bool { return slices.Contains(Kinds(), k) }

// IsOAuth reports whether k is one of the two OAuth kinds, whose pkce seat
// defaults to true.
func (k Kind) IsOAuth() bool {
	return k == KindOAuth2ClientCreds || k == KindOAuth2AuthCode
}
