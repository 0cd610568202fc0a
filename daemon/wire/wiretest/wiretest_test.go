package wiretest

import (
	"reflect"
	"testing"

	"github.com/snug/snugd/daemon/errcode"
	"github.com/snug/snugd/daemon/wire"
)

// TestParseNetResponseRoundTrip: both shapes the encoder writes read back
// as the value encoded.
func TestParseNetResponseRoundTrip(t *testing.T) {
	ok, err := wire.NewNetResponseText("r1", "https://api.example.com/x", 200, map[string][]string{"Content-Type": {"application/json"}}, wire.ValidText(`{"a":1}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []wire.NetResponse{ok, wire.NetErrorResponse("r2", "https://api.example.com/x", errcode.New(errcode.NetNotApproved, "not approved"))} {
		b, err := wire.Encode(want)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ParseNetResponse(b)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("ParseNetResponse(%s) = %+v, %v; want %+v", b, got, err, want)
		}
	}
}

// TestParseNetResponseRefuses: what is not one of the two shapes.
func TestParseNetResponseRefuses(t *testing.T) {
	for _, raw := range []string{
		``,
		`[]`,
		`{"type":"snug:net-request","v":1,"requestId":"r","ok":true,"status":200,"headers":{},"body":""}`,
		`{"type":"snug:net-response","v":2,"requestId":"r","ok":true,"status":200,"headers":{},"body":""}`,
		`{"type":"snug:net-response","v":1,"requestId":"r","status":200,"headers":{},"body":""}`,
		`{"type":"snug:net-response","v":1,"requestId":"r","ok":true,"headers":{},"body":""}`,
		`{"type":"snug:net-response","v":1,"requestId":"r","ok":true,"status":200,"headers":{},"body":"","extra":1}`,
		`{"type":"snug:net-response","v":1,"requestId":"r","ok":true,"status":200,"headers":{},"body":""} {}`,
		`{"type":"snug:net-response","v":1,"requestId":"r","ok":false}`,
		`{"type":"snug:net-response","v":1,"requestId":"r","ok":false,"error":{"code":"NET_NOT_APPROVED","message":"m"}}`,
		`{"type":"snug:net-response","v":1,"requestId":"r","ok":false,"status":200,"error":{"code":"NET_NOT_APPROVED","message":"m","retryable":false}}`,
		`{"type":"snug:net-response","v":1,"requestId":"r","ok":true,"status":99,"headers":{},"body":""}`,
	} {
		if r, err := ParseNetResponse([]byte(raw)); err == nil {
			t.Errorf("ParseNetResponse(%s) = %+v, want an error", raw, r)
		}
	}
	if _, err := ParseNetResponse(make([]byte, wire.MaxNetFrameBytes+1)); err == nil {
		t.Errorf("an oversized frame parsed")
	}
}
