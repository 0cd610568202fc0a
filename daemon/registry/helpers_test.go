package registry

import (
	"encoding/json"
	"errors"
	"os"
	"slices"
	"testing"

	"github.com/snug/snugd/daemon/requirement"
)

// doc is a requirement document under construction in a test.
type doc = map[string]any

// shipped loads the registry snugd ships.
func shipped(t testing.TB) *Registry {
	t.Helper()
	g, err := Load()
	if err != nil {
		t.Fatalf("Load() = %v", err)
	}
	return g
}

// testRegistry loads a registry from a testdata directory.
func testRegistry(t testing.TB, dir string) *Registry {
	t.Helper()
	g, err := load(os.DirFS(dir))
	if err != nil {
		t.Fatalf("load(%q) = %v", dir, err)
	}
	return g
}

// parse builds a requirement through requirement.Parse on a proposer
// channel (no userLayer), as the daemon does before Resolve.
func parse(t testing.TB, d doc) *requirement.Requirement {
	t.Helper()
	raw, err := json.Marshal(d)
	if err != nil {
		t.Fatalf("json.Marshal: %v", err)
	}
	r, vs := requirement.Parse(raw, requirement.Options{})
	if len(vs) > 0 {
		t.Fatalf("requirement.Parse(%s) = %v", raw, vs)
	}
	return r
}

// apiKeyDoc is an app-authored api_key requirement that names its
// provider and hosts as the test says.
func apiKeyDoc(name string, hosts ...string) doc {
	d := doc{
		"slot":     "data",
		"provider": doc{"name": name},
		"kind":     "api_key",
		"fields": []any{
			doc{"key": "api_key", "label": "API key", "type": "secret"},
		},
		"request": doc{"headerTemplate": doc{"X-Key": "{{api_key}}"}},
	}
	if len(hosts) > 0 {
		d["declaredApiHosts"] = hosts
	}
	return d
}

// lanDoc is an app-authored post-collection LAN requirement.
func lanDoc(name, address string) doc {
	return doc{
		"slot": "lights", "provider": doc{"name": name}, "kind": "api_key",
		"fields":           []any{doc{"key": "token", "label": "Token", "type": "secret"}},
		"request":          doc{"headerTemplate": doc{"X-Token": "{{token}}"}},
		"lanHost":          doc{"class": "rfc1918-ipv4-literal", "label": "Address"},
		"declaredApiHosts": []any{address},
	}
}

// loadRules returns the rule of every LoadError in err.
func loadRules(err error) []string {
	var rules []string
	var walk func(error)
	walk = func(err error) {
		var le *LoadError
		if errors.As(err, &le) && !isJoin(err) {
			rules = append(rules, le.Rule)
			return
		}
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				walk(e)
			}
		}
	}
	walk(err)
	slices.Sort(rules)
	return slices.Compact(rules)
}

func isJoin(err error) bool {
	_, ok := err.(interface{ Unwrap() []error })
	return ok
}

func ptr[T any](v T) *T { return &v }

// encodeEntry renders an entry for comparison.
func encodeEntry(t testing.TB, e Entry) string {
	t.Helper()
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatalf("json.Marshal(entry): %v", err)
	}
	return string(b)
}
