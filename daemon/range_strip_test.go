package daemon

import (
	"testing"
)

// TestRangeHeadersNeverReachTheUpstream: a partial response would split a
// credential the provider reflects past the exact-substring scrub of gate
// 10, so an app's Range and If-Range are stripped at gate 7, in
// any spelling.
// conformance: P3-X14-34
func TestRangeHeadersNeverReachTheUpstream(t *testing.T) {
	r := newRig(t)
	r.connect(t, "app1", noneReq("open", apiHost), nil)
	res, _ := r.net(t, "app1", frame("GET", "https://api.example.com/x", map[string]any{"headers": map[string]any{
		"Range": "bytes=0-9", "If-Range": `"etag"`, "X-Keep": "yes"}}))
	if res.Code != "" {
		t.Fatalf("Net = %q", res.Code)
	}
	got := r.up.last(t).Header
	if got.Get("Range") != "" || got.Get("If-Range") != "" || got.Get("X-Keep") != "yes" {
		t.Errorf("upstream headers = %v, want Range and If-Range stripped", got)
	}
}
