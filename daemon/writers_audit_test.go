package daemon

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strings"
	"testing"
)

// The writers' monopoly, checked on the source: a grant (approved status,
// approved_at, a frozen ceiling) and a staged change are written only by
// their writer, and a connection row reaches storage only through the
// writers' funnel and import reconciliation. A new code path that writes
// one of these seats fails this test until it is reviewed and listed here.
//
// conformance: P3-C12.3-01, P3-C12-04, P3-C12-03, P3-C12.1-08
func TestOnlyTheWritersWriteGrants(t *testing.T) {
	files, err := coreFiles()
	if err != nil {
		t.Fatal(err)
	}
	// seat → the functions allowed to assign it a non-nil value.
	allowed := map[string][]string{
		"Status=store.StatusApproved": {"approveRow"},
		"ApprovedAt":                  {"approveRow", "reapproveRow"},
		"PendingRequirementJSON":      {"stagedRow"},
		"AllowedHosts":                {"DeclaredRow", "approveRow", "reapproveRow", "Reconnect", "reconcile"},
		"RequirementJSON":             {"DeclaredRow", "reapproveRow", "reconcile"},
		"UpsertConnection":            {"Write", "reconcile"},
	}
	found := map[string][]string{}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			// Variables holding daemon's read view (Connection{…}) are
			// not rows: building a view writes nothing.
			views := map[string]bool{}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.CompositeLit:
					if id, ok := n.Type.(*ast.Ident); ok && id.Name == "Connection" {
						return false
					}
				case *ast.AssignStmt:
					for i, lhs := range n.Lhs {
						if id, ok := lhs.(*ast.Ident); ok && i < len(n.Rhs) {
							if cl, ok := n.Rhs[i].(*ast.CompositeLit); ok {
								if tid, ok := cl.Type.(*ast.Ident); ok && tid.Name == "Connection" {
									views[id.Name] = true
								}
							}
						}
						sel, ok := lhs.(*ast.SelectorExpr)
						if !ok || i >= len(n.Rhs) || isNil(n.Rhs[i]) {
							continue
						}
						if base, ok := sel.X.(*ast.Ident); ok && views[base.Name] {
							continue
						}
						seat := sel.Sel.Name
						if seat == "Status" {
							seat += "=" + exprString(n.Rhs[i])
						}
						found[seat] = append(found[seat], fn.Name.Name)
					}
				case *ast.KeyValueExpr:
					if id, ok := n.Key.(*ast.Ident); ok && !isNil(n.Value) {
						seat := id.Name
						if seat == "Status" {
							seat += "=" + exprString(n.Value)
						}
						found[seat] = append(found[seat], fn.Name.Name)
					}
				case *ast.CallExpr:
					if sel, ok := n.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "UpsertConnection" {
						found["UpsertConnection"] = append(found["UpsertConnection"], fn.Name.Name)
					}
				}
				return true
			})
		}
	}
	for seat, fns := range allowed {
		if len(found[seat]) == 0 {
			t.Errorf("no function writes %s: the audit is looking at the wrong names", seat)
		}
		for _, fn := range found[seat] {
			if !slices.Contains(fns, fn) {
				t.Errorf("%s writes %s; only %v may", fn, seat, fns)
			}
		}
	}
}

func isNil(e ast.Expr) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == "nil"
}

func exprString(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.SelectorExpr:
		return exprString(e.X) + "." + e.Sel.Name
	case *ast.Ident:
		return e.Name
	}
	return "?"
}

// The credential cache's promise, checked on the source: the executor reads
// credential slices from secretCache, which only connectionChanged clears,
// so a revoked or replaced value could be served after its write returned
// if a path wrote snug_secrets without ending in connectionChanged. Every
// function that writes snug_secrets is listed here after that was checked;
// a new one fails this test until it is reviewed and listed.
func TestSecretWritersClearTheCache(t *testing.T) {
	files, err := coreFiles()
	if err != nil {
		t.Fatal(err)
	}
	writes := []string{"PutSecret", "DeleteSecret", "DeleteSecretsWithPrefix", "DeleteSlotSecrets", "writeConnState"}
	// writer → how it reaches connectionChanged.
	reviewed := map[string]string{
		"SetCredentials": "calls connectionChanged after its Update commits",
		"Revoke":         "runs through write, which calls connectionChanged after the commit",
		"WriteConnState": "a helper; its callers are listed here themselves",
		"WriteVerified":  "the pairing ceremonies' one write, a helper of CommitIfUnchanged's callers: CommitIfUnchanged calls connectionChanged after its Update commits",
		"markConnection": "calls connectionChanged after its Update commits a change (the OAuth, token-claim and LAN follow-ups)",

		// The token-claim family (claim.go).
		"WriteClaim": "a helper of commitClaim, through CommitIfUnchanged, which calls connectionChanged after its Update commits",
		"writeLink":  "a helper of commitLink (linkdev.go), which calls connectionChanged after its Update commits",
		"reconcile":  "runs inside Import, which calls connectionChanged for every landed row after the commit",

		// The exchange family (lan.go).
		"writeLANPair": "a helper of commitLANPair, which calls connectionChanged after its Update commits",
		// The OAuth kinds (oauthconn.go, oauthflow.go).
		"revokeRow":       "Revoke's writer: runs through write, which calls connectionChanged after the commit",
		"writeOAuthToken": "a helper of storeToken, which calls connectionChanged after a sign-in and clears the cache (secretCache.forget) after a refresh: a refresh changes no grant, so it must not disarm standing approvals",
		"StateKey":        "writes auth:_state_hmac, outside every slot slice: the cache holds slot slices only",
		"SealFlow":        "writes auth:_flow:<id>, outside every slot slice",
		"SweepFlows":      "deletes auth:_flow:<id>, outside every slot slice",
		"oauthCallback":   "marks auth:_flow:<id> used, outside every slot slice; its tokens go through storeToken",
	}
	fset := token.NewFileSet()
	found := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				var callee string
				switch f := call.Fun.(type) {
				case *ast.SelectorExpr:
					callee = f.Sel.Name
				case *ast.Ident:
					callee = f.Name
				}
				if !slices.Contains(writes, callee) {
					return true
				}
				found++
				if _, ok := reviewed[fn.Name.Name]; !ok {
					t.Errorf("%s writes snug_secrets (%s) but is not a reviewed writer: make it end in connectionChanged, then list it", fn.Name.Name, callee)
				}
				return true
			})
		}
	}
	if found == 0 {
		t.Error("no function writes snug_secrets: the audit is looking at the wrong names")
	}
}
