package main

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/snug/snugd"

// rule says what one folder may import directly (besides the standard
// library) and what must never appear among its transitive dependencies.
type rule struct {
	pkg       string   // module-relative package path; a trailing "/..." covers subpackages
	allow     []string // import path prefixes allowed as direct non-std imports
	neverDeps []string // import path prefixes forbidden anywhere in the dependency graph
}

var (
	leafVocabulary = []string{module + "/daemon/errcode", module + "/daemon/wire"}
	core           = []string{module + "/api", module + "/cmd"}
)

// rules are DESIGN.md's layout table: arrows point cmd/snugd → api → daemon →
// {transports, lan, linkdevice}, and the leaves know nothing of the core.
var rules = []rule{
	{pkg: "daemon/errcode", neverDeps: []string{module + "/"}},
	{pkg: "daemon/wire", allow: []string{module + "/daemon/errcode"}, neverDeps: []string{module + "/daemon/internal", module + "/daemon/template", module + "/transports"}},
	{pkg: "daemon/template", allow: []string{"golang.org/x/crypto"}, neverDeps: []string{module + "/"}},
	{pkg: "daemon/internal/store/...", allow: []string{"github.com/mattn/go-sqlite3"}, neverDeps: []string{module + "/"}},
	{pkg: "daemon/requirement", allow: []string{module + "/daemon/template", "golang.org/x/net", "golang.org/x/text"}, neverDeps: core},
	{pkg: "daemon/registry", allow: []string{module + "/daemon/requirement", module + "/daemon/template"}, neverDeps: core},
	{pkg: "daemon/starter", allow: []string{module + "/daemon/requirement", module + "/daemon/template"}, neverDeps: core},
	{pkg: "daemon/...", allow: []string{module + "/daemon", module + "/transports", module + "/lan", module + "/linkdevice", "github.com/mattn/go-sqlite3", "golang.org/x/crypto", "golang.org/x/net", "golang.org/x/text", "golang.org/x/sys"}, neverDeps: append([]string{"github.com/labstack", "github.com/kardianos"}, core...)},
	{pkg: "transports/...", allow: append([]string{module + "/transports"}, leafVocabulary...), neverDeps: append([]string{module + "/daemon/internal", module + "/lan", module + "/linkdevice"}, core...)},
	{pkg: "lan/...", allow: append([]string{module + "/lan", "github.com/grandcat/zeroconf"}, leafVocabulary...), neverDeps: append([]string{module + "/transports", module + "/daemon/internal", module + "/linkdevice"}, core...)},
	{pkg: "linkdevice/...", allow: append([]string{module + "/linkdevice", "github.com/mdp/qrterminal", "rsc.io/qr"}, leafVocabulary...), neverDeps: append([]string{module + "/daemon/internal", module + "/transports", module + "/lan"}, core...)},
	{pkg: "api/...", allow: []string{module + "/api", module + "/daemon", "github.com/labstack/echo/v4"}, neverDeps: []string{module + "/cmd", "github.com/kardianos"}},
	{pkg: "packaging", neverDeps: []string{module + "/"}},
}

type listed struct {
	ImportPath string
	Standard   bool
	Imports    []string
	Deps       []string
}

// TestImportArrows keeps the import arrows of DESIGN.md from turning back.
func TestImportArrows(t *testing.T) {
	out, err := exec.Command("go", "list", "-json", module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	std := stdPackages(t)
	dec := json.NewDecoder(strings.NewReader(string(out)))
	seen := 0
	for dec.More() {
		var p listed
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("decode go list output: %v", err)
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		r, ok := ruleFor(rel)
		if !ok {
			continue
		}
		seen++
		for _, imp := range p.Imports {
			if std[imp] || hasAnyPrefix(imp, r.allow) {
				continue
			}
			t.Errorf("%s imports %s, which DESIGN.md's layout does not allow", p.ImportPath, imp)
		}
		for _, dep := range p.Deps {
			if dep != p.ImportPath && hasAnyPrefix(dep, r.neverDeps) {
				t.Errorf("%s depends on %s: the arrow turns back", p.ImportPath, dep)
			}
		}
	}
	if seen == 0 {
		t.Fatal("no package matched a rule")
	}
}

func ruleFor(rel string) (rule, bool) {
	for _, r := range rules {
		if base, ok := strings.CutSuffix(r.pkg, "/..."); ok {
			if rel == base || strings.HasPrefix(rel, base+"/") {
				return r, true
			}
		} else if rel == r.pkg {
			return r, true
		}
	}
	return rule{}, false
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if s == p || strings.HasPrefix(s, strings.TrimSuffix(p, "/")+"/") || (strings.HasSuffix(p, "/") && strings.HasPrefix(s, p)) {
			return true
		}
	}
	return false
}

func stdPackages(t *testing.T) map[string]bool {
	t.Helper()
	out, err := exec.Command("go", "list", "std").Output()
	if err != nil {
		t.Fatalf("go list std: %v", err)
	}
	m := map[string]bool{"C": true}
	for _, l := range strings.Fields(string(out)) {
		m[l] = true
	}
	return m
}
