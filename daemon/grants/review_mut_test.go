package grants

import (
	"fmt"
	"strings"
	"testing"
)

// TestDiffJSONEmptyContainers: an empty object or array is a leaf of its
// own, so filling one (or emptying it) shows as the container's change
// beside its new members', and a container with members is no leaf.
func TestDiffJSONEmptyContainers(t *testing.T) {
	show := func(cs []FieldChange) string {
		var b strings.Builder
		for _, c := range cs {
			o, n := "-", "-"
			if c.Old != nil {
				o = *c.Old
			}
			if c.New != nil {
				n = *c.New
			}
			fmt.Fprintf(&b, "%s:%s>%s ", c.Path, o, n)
		}
		return b.String()
	}
	for _, c := range []struct{ old, new, want string }{
		{`{"a":{},"b":[]}`, `{"a":{"x":1},"b":[2]}`, `a:{}>- a.x:->1 b:[]>- b[0]:->2 `},
		{`{"a":{"x":1},"b":[2]}`, `{"a":{},"b":[]}`, `a:->{} a.x:1>- b:->[] b[0]:2>- `},
		{`{}`, `{"a":1}`, `:{}>- a:->1 `},
		{`[]`, `[1]`, `:[]>- [0]:->1 `},
		{`{"a":{"x":[1,{"y":2}]}}`, `{"a":{"x":[1,{"y":2}]}}`, ``},
	} {
		cs, err := diffJSON(c.old, c.new)
		if err != nil {
			t.Fatal(err)
		}
		if got := show(cs); got != c.want {
			t.Errorf("diffJSON(%s, %s) = %q, want %q", c.old, c.new, got, c.want)
		}
	}
}

// TestReviewTokenOfAnUnreadablePendingChange: an approved row whose staged
// change no longer parses (the store keeps it; the review shows it as
// invalid) still has a review token, over the change's JSON as stored:
// no hosts are derived from a change that has none.
func TestReviewTokenOfAnUnreadablePendingChange(t *testing.T) {
	c := Connection{AppID: "app1", Slot: "ex", Status: StatusApproved, AllowedHosts: []string{"api.example.com"}, PendingJSON: `{"slot":`}
	tok := reviewToken(c)
	c.PendingJSON = `{"slot":1`
	if !strings.HasPrefix(tok, "rv1_") || reviewToken(c) == tok {
		t.Errorf("review tokens %q and %q: want two different rv1_ tokens", tok, reviewToken(c))
	}
}
