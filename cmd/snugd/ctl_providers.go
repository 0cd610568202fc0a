package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/snug/snugd/daemon/registry"
	"github.com/snug/snugd/daemon/requirement"
)

const providersSynopsis = "providers [QUERY] [--json] | providers show ID [--json]"

// ctlProviders is snugd ctl providers [QUERY] [--json] | providers show
// ID [--json]: the pinned provider registry, browsed. It reads the registry
// compiled into this binary, the same data files the daemon of this build
// loads, so it works without a running daemon; nothing configures the
// registry, so the daemon cannot hold another one unless it is another
// version (GET /v1/registry serves the daemon's own).
func ctlProviders(_ context.Context, c *ctl, args []string) int {
	fs := c.flags(providersSynopsis)
	pos, code, ok := parseCtlArgs(fs, args, 2)
	if !ok {
		return code
	}
	g, err := registry.Load()
	if err != nil { // the daemon would refuse to start on the same data
		fmt.Fprintf(c.e.stderr, "%s: the built-in registry does not load: %v\n", c.name, err)
		return exitNo
	}
	if len(pos) > 0 && pos[0] == "show" {
		if len(pos) != 2 {
			fmt.Fprintf(c.e.stderr, "%s: show needs the ID of one entry (snugd ctl providers lists them)\n", c.name)
			return exitUsage
		}
		return providerShow(c, g, pos[1])
	}
	if len(pos) > 1 {
		fmt.Fprintf(c.e.stderr, "%s: one QUERY at most; quote a query with spaces\n", c.name)
		return exitUsage
	}
	query := ""
	if len(pos) == 1 {
		query = pos[0]
	}
	var list []providerSummary
	for _, e := range g.Entries() {
		if matchesQuery(e, query) {
			list = append(list, summarizeEntry(e))
		}
	}
	if c.json {
		if list == nil {
			list = []providerSummary{}
		}
		return c.printJSON(map[string]any{"providers": list})
	}
	if len(list) == 0 {
		c.out("no registry entry matches %q (snugd ctl providers lists them all)", query)
		return exitOK
	}
	printProviders(c, list)
	return exitOK
}

// providerSummary is one row of the listing, and its --json form.
type providerSummary struct {
	ID      string   `json:"id"`
	Name    string   `json:"name"`
	Aliases []string `json:"aliases"`
	// Hosts are the pinned hosts; empty for a LAN entry.
	Hosts []string `json:"hosts"`
	// Kinds are the credential kinds of the entry's options, in file order,
	// each once.
	Kinds []string `json:"kinds"`
	// LAN reports a device on the user's own network: the entry pins no
	// host, and its one host is the address the person enters.
	LAN bool `json:"lan"`
	// Pairing is the pairing family that fills the credential, if any.
	Pairing string `json:"pairing,omitempty"`
	// DesktopSignIn and WebSignIn say whether an OAuth sign-in works on
	// that surface (signIn*).
	DesktopSignIn string `json:"desktopSignIn"`
	WebSignIn     string `json:"webSignIn"`
}

// Whether an OAuth sign-in works on a surface. It runs only where the
// registry vouches the provider's redirect for that surface; elsewhere it
// refuses at its start rather than guess a redirect.
const (
	signInYes       = "yes"         // the entry has a sign-in and its redirect is vouched here
	signInUnvouched = "not vouched" // the entry has a sign-in, but no vouched redirect here: it refuses
	signInNone      = "none"        // no sign-in: credentials are pasted or paired
)

func summarizeEntry(e registry.Entry) providerSummary {
	s := providerSummary{ID: e.ID, Name: e.DisplayName, Aliases: e.Aliases, Hosts: e.Hosts, LAN: e.LANHost != nil}
	if s.Aliases == nil {
		s.Aliases = []string{}
	}
	if s.Hosts == nil {
		s.Hosts = []string{}
	}
	for _, o := range e.Options {
		if k := string(o.Kind); !slices.Contains(s.Kinds, k) {
			s.Kinds = append(s.Kinds, k)
		}
	}
	if e.Pairing != nil {
		s.Pairing = string(e.Pairing.Family)
	}
	s.DesktopSignIn, s.WebSignIn = signIn(e)
	return s
}

// signIn says whether e's OAuth sign-in works on the desktop and on the
// web. Only the authorization-code kind redirects; client credentials
// fetch a token with no person signing in.
func signIn(e registry.Entry) (desktop, web string) {
	if !slices.ContainsFunc(e.Options, func(o registry.Option) bool { return o.Kind == requirement.KindOAuth2AuthCode }) {
		return signInNone, signInNone
	}
	desktop, web = signInUnvouched, signInUnvouched
	if e.DesktopRedirect != "" {
		desktop = signInYes
	}
	if e.WebRedirect != "" {
		web = signInYes
	}
	return desktop, web
}

// familyWords are the pairing families in plain words.
var familyWords = map[string]string{
	string(registry.FamilyExchange):   "link-button pairing",
	string(registry.FamilyTokenClaim): "setup-token claim",
	string(registry.FamilyDeviceLink): "QR device link",
}

// matchesQuery reports whether query (case-insensitive, a substring) is
// in e's ID, display name, an alias or a pinned host. The empty query
// matches every entry.
func matchesQuery(e registry.Entry, query string) bool {
	q := strings.ToLower(query)
	for _, s := range append(append([]string{e.ID, e.DisplayName}, e.Aliases...), e.Hosts...) {
		if strings.Contains(strings.ToLower(s), q) {
			return true
		}
	}
	return false
}

// kindWords are the credential kinds in plain words.
var kindWords = map[string]string{
	string(requirement.KindAPIKey):            "API key",
	string(requirement.KindBearerToken):       "token",
	string(requirement.KindBasicAuth):         "username and password",
	string(requirement.KindOAuth2AuthCode):    "OAuth sign-in",
	string(requirement.KindOAuth2ClientCreds): "OAuth client credentials",
	string(requirement.KindLinkedDevice):      "linked device",
	string(requirement.KindNone):              "no credential",
}

func words(kind string) string {
	if w, ok := kindWords[kind]; ok {
		return w
	}
	return kind
}

// printProviders prints the listing as aligned columns.
func printProviders(c *ctl, list []providerSummary) {
	tw := tabwriter.NewWriter(newTrimWriter(c.e.stdout), 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tCONNECTS WITH\tDESKTOP SIGN-IN\tWEB SIGN-IN")
	for _, s := range list {
		var kinds []string
		for _, k := range s.Kinds {
			kinds = append(kinds, words(k))
		}
		with := strings.Join(kinds, ", ")
		if s.Pairing != "" {
			with += ", by " + familyWords[s.Pairing]
		}
		if s.LAN {
			with += " (local network)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", shown(s.ID), shown(s.Name), with, dash(s.DesktopSignIn), dash(s.WebSignIn))
	}
	tw.Flush()
	c.out("\nsign-in: yes, it runs; not vouched, it refuses (the registry vouches no redirect there); -, none: paste or pair")
	c.out("snugd ctl providers show ID prints one entry's hosts, options, scopes, steps and sources")
}

func dash(s string) string {
	if s == signInNone {
		return "-"
	}
	return s
}

// providerShow prints one entry: in --json the reviewed data file itself,
// as GET /v1/registry serves it; else a readable page.
func providerShow(c *ctl, g *registry.Registry, id string) int {
	e, ok := g.Lookup(id)
	if !ok {
		fmt.Fprintf(c.e.stderr, "%s: no registry entry %q\n", c.name, shown(id))
		var ids []string
		for _, x := range g.Entries() {
			ids = append(ids, x.ID)
		}
		if s := suggest(id, ids); s != "" {
			fmt.Fprintf(c.e.stderr, "did you mean \"snugd ctl providers show %s\"?\n", s)
		}
		return exitNo
	}
	if c.json {
		raw, err := entryDocument(g, id)
		if err != nil {
			return c.fail(err)
		}
		return c.printJSON(raw)
	}
	printEntry(c, e)
	return exitOK
}

// entryDocument returns entry id of the registry document: its data file,
// compacted.
func entryDocument(g *registry.Registry, id string) (json.RawMessage, error) {
	var doc struct {
		Entries []json.RawMessage `json:"entries"`
	}
	if err := json.Unmarshal(g.Document(), &doc); err != nil {
		return nil, err
	}
	for _, raw := range doc.Entries {
		var head struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(raw, &head) == nil && head.ID == id {
			return raw, nil
		}
	}
	return nil, fmt.Errorf("entry %s is not in the registry document", id)
}

// printEntry prints one entry for a person: what it connects to, how,
// with which privilege, the steps, and where each fact was checked.
func printEntry(c *ctl, e registry.Entry) {
	c.out("%s (%s)", e.DisplayName, e.ID)
	if len(e.Aliases) > 0 {
		c.out("  also matches  %s", strings.Join(e.Aliases, ", "))
	}
	if e.HomepageURL != "" {
		c.out("  homepage      %s", e.HomepageURL)
	}
	if e.DocsURL != "" {
		c.out("  docs          %s", e.DocsURL)
	}
	if e.LANHost != nil {
		c.out("  hosts         none pinned: a device on your own network, at the address you enter (%s, a private IPv4 address)", e.LANHost.Label)
	} else {
		c.out("  hosts         %s", strings.Join(e.Hosts, ", "))
	}
	if len(e.Scopes) > 0 {
		c.out("  scopes        %s", strings.Join(e.Scopes, " "))
	} else {
		c.out("  scopes        none pinned")
	}
	c.out("  in a browser  %s", callable(e.BrowserCallable))
	if e.TestRequest != nil {
		c.out("  test request  %s %s", e.TestRequest.Method, e.TestRequest.PathAndQuery)
	}

	webShown := false // the web walkthrough serves the entry's OAuth flow: shown once, under it
	for _, o := range e.Options {
		c.out("")
		title := "option " + o.ID + ": " + o.Label + " (" + words(string(o.Kind)) + ")"
		if len(e.Options) > 1 && o.ID == e.DefaultOption {
			title += ", the default"
		}
		c.out("%s", title)
		if o.Kind == requirement.KindOAuth2AuthCode {
			desktop, web := signIn(e)
			c.out("  desktop       %s", surfaceWords(desktop))
			c.out("  web           %s", surfaceWords(web))
		}
		for _, f := range o.Fields {
			kind := "typed"
			if f.Type == requirement.FieldSecret || f.Type == requirement.FieldPassword {
				kind = "secret"
			}
			c.out("  field         %s (%s, %s): %s", f.Key, f.Label, kind, f.Description)
		}
		for _, name := range sortedTemplateNames(o.Request.HeaderTemplate) {
			c.out("  header        %s: %s", name, o.Request.HeaderTemplate[name])
		}
		for _, name := range sortedTemplateNames(o.Request.QueryTemplate) {
			c.out("  query         %s=%s", name, o.Request.QueryTemplate[name])
		}
		for _, ep := range []struct{ name, url string }{
			{"authorize", o.Endpoints.Authorize}, {"token", o.Endpoints.Token},
			{"refresh", o.Endpoints.Refresh}, {"revoke", o.Endpoints.Revoke},
		} {
			if ep.url != "" {
				c.out("  %-13s %s", ep.name, ep.url)
			}
		}
		if o.Kind == requirement.KindOAuth2AuthCode { // PKCE guards a redirect; client credentials have none
			c.out("  pkce          %s", onOff(o.PKCE == nil || *o.PKCE))
		}
		reg := o.Registration
		if len(reg.Instructions) == 0 && reg.ConsoleURL == "" {
			reg = e.Registration
		}
		printSteps(c, "steps", reg)
		if o.Kind.IsOAuth() && e.WebRegistration != nil && !webShown {
			printSteps(c, "steps on the web", *e.WebRegistration)
			webShown = true
		}
	}
	if p := e.Pairing; p != nil {
		c.out("")
		c.out("pairing: %s (%s), fills field %s", familyWords[string(p.Family)], p.Family, p.Field)
		c.out("  verify        %s", probeWords(p.Verify))
		c.out("                %s", p.Verify.Expect)
	}

	c.out("")
	c.out("sources")
	for _, s := range e.Sources {
		c.out("  %s (checked %s)", s.URL, s.Checked)
		if s.Note != "" {
			for _, line := range wrap(s.Note, 76) {
				c.out("    %s", line)
			}
		}
	}
}

func surfaceWords(s string) string {
	if s == signInYes {
		return "sign in with the provider: the registry vouches snugd's redirect"
	}
	return "no sign-in: the registry vouches no redirect for this surface, so it refuses rather than guess"
}

func callable(b *bool) string {
	switch {
	case b == nil:
		return "unknown: not documented whether a web page can call it"
	case *b:
		return "a web page can call it directly"
	}
	return "a web page cannot call it directly"
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

func probeWords(p registry.Probe) string {
	if p.RPC != "" {
		return "the helper's " + p.RPC + " call"
	}
	return p.Method + " " + p.Path
}

// printSteps prints a walkthrough as a numbered list, the console URL
// first with its whole host visible.
func printSteps(c *ctl, title string, r requirement.Registration) {
	if len(r.Instructions) == 0 && r.ConsoleURL == "" {
		return
	}
	c.out("  %s", title)
	if r.ConsoleURL != "" {
		c.out("    at %s", r.ConsoleURL)
	}
	for i, s := range r.Instructions {
		c.out("    %d. %s", i+1, s)
	}
}

func sortedTemplateNames(m map[string]string) []string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// wrap breaks s into lines of at most width bytes at spaces; a longer word
// stands on its own line.
func wrap(s string, width int) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(s) {
		switch {
		case line == "":
			line = w
		case len(line)+1+len(w) <= width:
			line += " " + w
		default:
			lines = append(lines, line)
			line = w
		}
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}
