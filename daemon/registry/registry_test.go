package registry

import (
	"encoding/json"
	"slices"
	"testing"
)

func TestDocumentIsTheShippedData(t *testing.T) {
	g, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Entries []struct {
			ID string `json:"id"`
		} `json:"entries"`
	}
	if err := json.Unmarshal(g.Document(), &doc); err != nil {
		t.Fatalf("Document is not JSON: %v", err)
	}
	var ids []string
	for _, e := range doc.Entries {
		ids = append(ids, e.ID)
	}
	var want []string
	for _, e := range g.Entries() {
		want = append(want, e.ID)
	}
	if !slices.Equal(ids, want) {
		t.Fatalf("Document ids = %v, want %v", ids, want)
	}
}
