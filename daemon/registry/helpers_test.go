package registry

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"
)

// shipped loads the registry snugd ships.
func shipped(t testing.TB) *Registry {
	t.Helper()
	g, err := Load()
	if err != nil {
		t.Fatalf("Load() = %v", err)
	}
	return g
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
