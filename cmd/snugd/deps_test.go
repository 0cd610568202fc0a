package main

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/snug/snugd"

// rule says what one folder may import directly (besides the standard
// library) and what must never appear among its transitive dependencies,
// and why. Prefixes in allow and neverDeps cover the package and its
// subpackages; a trailing "$" names the package alone.
type rule struct {
	pkg       string   // module-relative package path; a trailing "/..." covers subpackages
	why       string   // the reason for the rule, in DESIGN.md's terms
	allow     []string // import path prefixes allowed as direct non-std imports
	neverDeps []string // import path prefixes forbidden anywhere in the dependency graph
}

var (
	leafVocabulary = []string{module + "/daemon/errcode", module + "/daemon/wire"}
	core           = []string{module + "/api", module + "/cmd"}
	// testOnly are packages that only _test.go files may import.
	testOnly = []string{module + "/internal/testutil", module + "/daemon/oauth/oauthtest", module + "/daemon/wire/wiretest"}
)

// rules are DESIGN.md's layout table: arrows point cmd/snugd → api → daemon →
// {transports, lan, linkdevice}, and the leaves know nothing of the core.
// The first rule whose pkg matches a package is its rule, so the specific
// rules come before the folder-wide ones. Every rule must match a package:
// a rule that matches none is stale and fails the test (Tailscale's
// tstest/deptest reasoning: a rule nothing obeys guards nothing).
var rules = []rule{
	{pkg: "daemon/errcode", why: "the wire error registry every folder imports: a leaf that knows nothing of the module",
		neverDeps: []string{module + "/"}},
	{pkg: "daemon/internal/strictjson", why: "the one strict JSON reader wire and requirement share: a leaf, or the frame vocabulary would drag the core along",
		neverDeps: []string{module + "/"}},
	{pkg: "daemon/internal/ident", why: "the slot rule and the app-id rule, written once: a leaf, so the store can check them as its last line",
		neverDeps: []string{module + "/"}},
	{pkg: "daemon/internal/multimatch", why: "the one-pass multi-pattern matcher the value scrub runs: a leaf that knows nothing of the module",
		neverDeps: []string{module + "/"}},
	{pkg: "internal/names", why: "the one text rule for names a person reads to decide trust (hosts, helper labels, bridges): a leaf that hostauth, linkdevice, lan and the CLI all import",
		allow: []string{"golang.org/x/text"}, neverDeps: []string{module + "/"}},
	{pkg: "daemon/scrub", why: "the scrubs are pure functions of their input, reusable by every seat without the core",
		allow:     []string{module + "/daemon/internal/multimatch"},
		neverDeps: []string{module + "/daemon/errcode", module + "/daemon/internal/store", module + "/daemon/template", module + "/daemon/wire", module + "/transports", module + "/daemon$"}},
	{pkg: "daemon/wire", why: "the frame vocabulary transports, lan and linkdevice import: it must not bring storage, templates or a transport with it (x/sys/cpu only says whether the escape's AVX2 loop may run)",
		allow:     []string{module + "/daemon/errcode", module + "/daemon/internal/strictjson", "golang.org/x/sys/cpu"},
		neverDeps: []string{module + "/daemon/internal/store", module + "/daemon/template", module + "/transports"}},
	{pkg: "daemon/template", why: "the credential template engine is a leaf the requirement schema and the executor share",
		allow: []string{"golang.org/x/crypto"}, neverDeps: []string{module + "/"}},
	{pkg: "daemon/internal/store/...", why: "every SQL statement, and only SQL: the store knows no domain rule but the identifier rules, so no domain package may hide below it",
		allow: []string{"github.com/mattn/go-sqlite3", module + "/daemon/internal/ident"}, neverDeps: core},
	{pkg: "daemon/hostauth", why: "host pairing and authentication need only the store, a clock and a logger, never the executor or a transport",
		allow:     []string{module + "/daemon/errcode", module + "/daemon/internal/store", module + "/internal/names"},
		neverDeps: append([]string{module + "/daemon$", module + "/transports", module + "/lan", module + "/linkdevice"}, core...)},
	{pkg: "daemon/reset", why: "snugd ctl reset works on a stopped daemon's files under the store's lock: it needs the store alone, never the running daemon, a transport or the API",
		allow:     []string{module + "/daemon/internal/store"},
		neverDeps: append([]string{module + "/daemon$", module + "/transports", module + "/lan", module + "/linkdevice"}, core...)},
	{pkg: "daemon/requirement", why: "the requirement schema is read by the core and the CLI; it must not reach back into either",
		allow:     []string{module + "/daemon/template", module + "/daemon/internal/strictjson", module + "/daemon/internal/ident", "golang.org/x/net", "golang.org/x/text"},
		neverDeps: core},
	{pkg: "daemon/registry", why: "the pinned provider registry builds on the requirement schema only",
		allow: []string{module + "/daemon/requirement", module + "/daemon/template"}, neverDeps: core},
	{pkg: "daemon/oauth/oauthtest", why: "the tests' authorization server (zitadel's OP): test code only, knowing nothing of snugd",
		allow: []string{"github.com/zitadel/oidc/v3", "golang.org/x/net/html"}, neverDeps: []string{module + "/"}},
	{pkg: "daemon/oauth", why: "the OAuth protocol core takes plain values and an *http.Client from the daemon: it never reaches storage or the executor",
		neverDeps: []string{module + "/"}},
	{pkg: "daemon/starter", why: "the bundled starters build on the requirement schema only",
		allow: []string{module + "/daemon/requirement", module + "/daemon/template"}, neverDeps: core},
	{pkg: "daemon/hints", why: "the hint bus is a leaf every part publishes to: it carries references, and knows nothing of them",
		neverDeps: []string{module + "/"}},
	{pkg: "daemon/journal", why: "the journal is a leaf of the core: grants, fetch and pairing write to it, so it must not reach back into them",
		allow:     []string{module + "/daemon/errcode", module + "/daemon/hostauth", module + "/daemon/internal/store"},
		neverDeps: append([]string{module + "/daemon$", module + "/daemon/grants", module + "/daemon/fetch", module + "/daemon/pairing", module + "/transports"}, core...)},
	{pkg: "daemon/grants", why: "the grant book is below the executor and the ceremonies: what it needs of them it declares (Gates) or takes as hooks, and it never calls the network",
		allow: []string{module + "/daemon/errcode", module + "/daemon/hints", module + "/daemon/hostauth", module + "/daemon/internal/", module + "/daemon/journal",
			module + "/daemon/registry", module + "/daemon/requirement", module + "/daemon/scrub", module + "/daemon/starter", module + "/daemon/template", "golang.org/x/text"},
		neverDeps: append([]string{module + "/daemon$", module + "/daemon/fetch", module + "/daemon/pairing", module + "/transports", module + "/lan", module + "/linkdevice"}, core...)},
	{pkg: "daemon/fetch", why: "the executor reads the grant book's snapshot and owns the transports; the ceremonies above it reach the network only through its Side",
		allow: []string{module + "/daemon/errcode", module + "/daemon/grants", module + "/daemon/hints", module + "/daemon/hostauth", module + "/daemon/internal/", module + "/daemon/journal",
			module + "/daemon/registry", module + "/daemon/requirement", module + "/daemon/scrub", module + "/daemon/template", module + "/daemon/wire", module + "/transports", module + "/lan", module + "/linkdevice",
			module + "/internal/names"},
		neverDeps: append([]string{module + "/daemon$", module + "/daemon/pairing"}, core...)},
	{pkg: "daemon/pairing", why: "the ceremonies are the top of the core: they use the executor's side client (transports only for the answer types it returns) and commit through the grant book; only the composition root sits above them",
		allow: []string{module + "/daemon/claim", module + "/daemon/errcode", module + "/daemon/fetch", module + "/daemon/grants", module + "/daemon/hints", module + "/daemon/hostauth",
			module + "/daemon/internal/", module + "/daemon/journal", module + "/daemon/oauth", module + "/daemon/registry", module + "/daemon/requirement", module + "/daemon/scrub", module + "/transports", module + "/lan", module + "/linkdevice"},
		neverDeps: append([]string{module + "/daemon$"}, core...)},
	{pkg: "daemon/...", why: "the core composes the periphery and is composed by api and cmd: never the other way, and never echo or the service library",
		allow:     []string{module + "/daemon", module + "/transports", module + "/lan", module + "/linkdevice", "github.com/mattn/go-sqlite3", "golang.org/x/crypto", "golang.org/x/net", "golang.org/x/text", "golang.org/x/sys"},
		neverDeps: append([]string{"github.com/labstack", "github.com/kardianos"}, core...)},
	{pkg: "transports/...", why: "outbound transports take pins and limits as plain values: no storage, no discovery, no core",
		allow:     append([]string{module + "/transports"}, leafVocabulary...),
		neverDeps: append([]string{module + "/daemon/internal/store", module + "/lan", module + "/linkdevice"}, core...)},
	{pkg: "lan/...", why: "mDNS discovery returns plain structs and receives its client: it never dials through a transport (zeroconf asks; its own listener, on x/net/ipv4, hears every answer, and miekg/dns reads them record by record)",
		allow:     append([]string{module + "/lan", "github.com/grandcat/zeroconf", "github.com/miekg/dns", "golang.org/x/net/ipv4"}, leafVocabulary...),
		neverDeps: append([]string{module + "/transports", module + "/daemon/internal/store", module + "/linkdevice"}, core...)},
	{pkg: "linkdevice/...", why: "the helper side runs in its own process and must not carry the daemon with it (go-landlock and x/sys/unix confine a helper on Linux; daemon/scrub's pure scrub cleans its stderr)",
		allow:     append([]string{module + "/linkdevice", module + "/internal/names", module + "/daemon/scrub", "github.com/mdp/qrterminal", "rsc.io/qr", "github.com/landlock-lsm/go-landlock", "golang.org/x/sys/unix"}, leafVocabulary...),
		neverDeps: append([]string{module + "/daemon/internal/store", module + "/transports", module + "/lan"}, core...)},
	{pkg: "api/...", why: "a thin adapter over the daemon: echo stays inside it, and it never reaches the CLI or the service library",
		allow:     []string{module + "/api", module + "/daemon", "github.com/labstack/echo/v4"},
		neverDeps: []string{module + "/cmd", "github.com/kardianos"}},
	{pkg: "internal/testutil", why: "test helpers every package's tests share: they may know the error codes and nothing else of the module, and decode a QR with gozxing, independent of snugd's encoder",
		allow:     []string{module + "/daemon/errcode", "github.com/makiuchi-d/gozxing"},
		neverDeps: append([]string{module + "/daemon$", module + "/daemon/internal", module + "/transports", module + "/lan", module + "/linkdevice"}, core...)},
	{pkg: "packaging", why: "the shipped service files and their embed: nothing to import",
		neverDeps: []string{module + "/"}},
}

type listed struct {
	ImportPath string
	Standard   bool
	Imports    []string
	Deps       []string
}

// TestImportArrows keeps the import arrows of DESIGN.md from turning back.
func TestImportArrows(t *testing.T) {
	for _, r := range rules {
		if r.why == "" {
			t.Errorf("rule for %s gives no reason", r.pkg)
		}
	}
	out, err := exec.Command("go", "list", "-json", module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	std := stdPackages(t)
	dec := json.NewDecoder(strings.NewReader(string(out)))
	matched := map[string]bool{} // rule pkg → it matched a package
	for dec.More() {
		var p listed
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("decode go list output: %v", err)
		}
		for _, dep := range p.Deps {
			if hasAnyPrefix(dep, testOnly) && !hasAnyPrefix(p.ImportPath, testOnly) {
				t.Errorf("%s depends on %s, which only tests may import", p.ImportPath, dep)
			}
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		r, ok := ruleFor(rel)
		if !ok {
			continue
		}
		matched[r.pkg] = true
		for _, imp := range p.Imports {
			if std[imp] || hasAnyPrefix(imp, r.allow) {
				continue
			}
			t.Errorf("%s imports %s, which DESIGN.md's layout does not allow (%s)", p.ImportPath, imp, r.why)
		}
		for _, dep := range p.Deps {
			if dep != p.ImportPath && hasAnyPrefix(dep, r.neverDeps) {
				t.Errorf("%s depends on %s: the arrow turns back (%s)", p.ImportPath, dep, r.why)
			}
		}
	}
	for _, r := range rules {
		if !matched[r.pkg] {
			t.Errorf("the rule for %s matches no package: remove or fix it", r.pkg)
		}
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
		if exact, ok := strings.CutSuffix(p, "$"); ok {
			if s == exact {
				return true
			}
			continue
		}
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
