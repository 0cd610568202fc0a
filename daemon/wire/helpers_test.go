package wire

import (
	"encoding/json"
	"errors"
	"maps"
	"testing"

	"github.com/snug/snugd/daemon/errcode"
)

// netFrame returns a valid net-request as a map, with mods applied; a nil
// value deletes the key.
func netFrame(mods map[string]any) map[string]any {
	f := map[string]any{
		"type": "snug:net-request", "v": 1, "requestId": "r1", "instanceId": "i1",
		"url": "https://api.example.com/v1/items", "method": "GET",
	}
	for k, v := range mods {
		if v == nil {
			delete(f, k)
		} else {
			f[k] = v
		}
	}
	return f
}

// with returns m with k set to v (v nil deletes k).
func with(m map[string]any, kv ...any) map[string]any {
	out := maps.Clone(m)
	for i := 0; i < len(kv); i += 2 {
		if kv[i+1] == nil {
			delete(out, kv[i].(string))
		} else {
			out[kv[i].(string)] = kv[i+1]
		}
	}
	return out
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// parseErr returns err as a *ParseError, failing the test when it is not.
func parseErr(t *testing.T, err error) *ParseError {
	t.Helper()
	pe, ok := errors.AsType[*ParseError](err)
	if !ok {
		t.Fatalf("error = %v (%T), want a *ParseError", err, err)
	}
	return pe
}

func wantCode(t *testing.T, name string, err error, code errcode.Code) *ParseError {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: error = nil, want %s", name, code)
	}
	pe := parseErr(t, err)
	if pe.Code != code || !errors.Is(err, code) {
		t.Fatalf("%s: code = %s (%s), want %s", name, pe.Code, pe.Message, code)
	}
	return pe
}

// decodeMap decodes an encoded frame for inspection.
func decodeMap(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("unmarshal %s: %v", b, err)
	}
	return m
}
