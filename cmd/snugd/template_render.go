package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/snug/snugd/daemon/requirement"
	"github.com/snug/snugd/daemon/template"
	"github.com/snug/snugd/daemon/wire"
)

const templateRenderUsage = `usage: snugd ctl template render --requirement FILE --values FILE --method M --url U
                                [--body-file F] [--timestamp N]

Renders a requirement's header and query templates offline, exactly as the
executor would for one request: no daemon, no stored credential.

  --requirement FILE  the connection requirement (JSON); its lint's findings are
                      printed as "path: rule: message" lines and exit 1
  --values FILE       a JSON object of field key to credential value, from a file
                      no one but you may read (chmod 600), or - for standard input;
                      never on the command line
  --method M          GET, HEAD, POST, PUT, PATCH or DELETE
  --url U             the URL as it will be sent; its host must be one of the
                      requirement's hosts
  --body-file F       the request body (- for standard input, unless --values is)
  --timestamp N       the render pass's clock, in unix seconds (default: now)

Prints the URL on the first line, query credentials placed, then each rendered
header as "Name: value", one per line. The output holds credentials: it is for
your terminal, not for a log.
`

// cmdTemplate is snugd ctl template SUBCOMMAND.
func cmdTemplate(ctx context.Context, e env, args []string) int {
	if len(args) == 0 || isHelp(args[0]) {
		w := e.stderr
		if len(args) > 0 {
			w = e.stdout
		}
		fmt.Fprint(w, templateRenderUsage)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	if args[0] != "render" {
		fmt.Fprintf(e.stderr, "snugd ctl template: unknown subcommand %q\n\n%s", args[0], templateRenderUsage)
		return exitUsage
	}
	return cmdTemplateRender(ctx, e, args[1:])
}

// renderArgs are snugd ctl template render's flags.
type renderArgs struct {
	requirement, values, method, url, bodyFile, timestamp string
}

func cmdTemplateRender(_ context.Context, e env, args []string) int {
	const name = "snugd ctl template render"
	var a renderArgs
	flags := flag.NewFlagSet(name, flag.ContinueOnError)
	flags.SetOutput(e.stderr)
	flags.Usage = func() { fmt.Fprint(e.stderr, templateRenderUsage) }
	flags.StringVar(&a.requirement, "requirement", "", "the requirement file")
	flags.StringVar(&a.values, "values", "", "the values file, or - for standard input")
	flags.StringVar(&a.method, "method", "", "the request method")
	flags.StringVar(&a.url, "url", "", "the request URL")
	flags.StringVar(&a.bodyFile, "body-file", "", "the request body file, or -")
	flags.StringVar(&a.timestamp, "timestamp", "", "the clock, in unix seconds")
	if _, code, ok := parseCtlArgs(flags, args, 0); !ok {
		return code
	}
	var missing []string
	for _, f := range []struct{ name, v string }{{"--requirement", a.requirement}, {"--values", a.values}, {"--method", a.method}, {"--url", a.url}} {
		if f.v == "" {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		fmt.Fprintf(e.stderr, "%s: %s required\n\n%s", name, strings.Join(missing, ", "), templateRenderUsage)
		return exitUsage
	}
	if a.values == "-" && a.bodyFile == "-" {
		fmt.Fprintf(e.stderr, "%s: --values and --body-file cannot both read standard input\n", name)
		return exitUsage
	}
	var now func() time.Time
	if a.timestamp != "" {
		ts, err := parseTimestamp(a.timestamp)
		if err != nil {
			fmt.Fprintf(e.stderr, "%s: --timestamp: %v\n", name, err)
			return exitUsage
		}
		now = func() time.Time { return time.Unix(ts, 0) }
	}
	out, findings, err := renderTemplates(e.stdin, a, template.Env{Now: now})
	for _, f := range findings {
		fmt.Fprintln(e.stderr, f)
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "%s: %v\n", name, err)
		return exitNo
	}
	if len(findings) > 0 {
		fmt.Fprintf(e.stderr, "%s: the requirement is not valid (%d %s)\n", name, len(findings), plural(len(findings), "finding", "findings"))
		return exitNo
	}
	fmt.Fprint(e.stdout, out)
	return exitOK
}

// parseTimestamp reads unix seconds: decimal digits, no sign.
func parseTimestamp(s string) (int64, error) {
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return 0, fmt.Errorf("must be unix seconds (decimal digits), not %q", s)
	}
	ts, err := strconv.ParseInt(s, 10, 64)
	if err != nil || ts > 1<<40 {
		return 0, fmt.Errorf("%q is out of range", s)
	}
	return ts, nil
}

// renderTemplates does the work of template render: it returns the output,
// or the requirement's findings as "path: rule: message" lines, or an
// error. No error carries a credential value.
func renderTemplates(stdin io.Reader, a renderArgs, env template.Env) (string, []string, error) {
	raw, err := readRequirementFile(stdin, a.requirement)
	if err != nil {
		return "", nil, err
	}
	req, violations := requirement.Parse(raw, requirement.Options{})
	if len(violations) > 0 {
		lines := make([]string, len(violations))
		for i, v := range violations {
			lines[i] = fmt.Sprintf("%s: %s: %s", v.Path, v.Rule, v.Message)
		}
		return "", lines, nil
	}
	set, findings := template.Compile(req.FieldKeys(), req.Request.Templates())
	if len(findings) > 0 {
		lines := make([]string, len(findings))
		for i, f := range findings {
			lines[i] = fmt.Sprintf("%s: %s: %s", f.Path, f.Rule, f.Message)
		}
		return "", lines, nil
	}

	var body string
	hasBody := a.bodyFile != ""
	if hasBody {
		var b []byte
		if a.bodyFile == "-" {
			b, err = readBounded(stdin, wire.MaxNetRequestBody, "standard input")
		} else {
			b, err = readBodyFile(a.bodyFile)
		}
		if err != nil {
			return "", nil, fmt.Errorf("--body-file: %w", err)
		}
		body = string(b)
	}
	target, err := renderTarget(req, a.method, a.url, body, hasBody)
	if err != nil {
		return "", nil, err
	}

	data, err := readSecretInput(stdin, a.values)
	if err != nil {
		return "", nil, fmt.Errorf("--values: %w", err)
	}
	values, err := parseValues(data)
	if err != nil {
		return "", nil, fmt.Errorf("--values: %w", err)
	}
	if err := checkValueKeys(values, req.FieldKeys()); err != nil {
		return "", nil, fmt.Errorf("--values: %w", err)
	}

	// The executor's own spelling of the URL it sends (daemon/fetch_gates.go):
	// request.url and request.pathAndQuery are exactly the bytes it sends
	// before query credentials are placed.
	rendered, err := set.Render(values, template.Request{
		Method:       a.method,
		URL:          target.String(),
		PathAndQuery: target.RequestURI(),
		Body:         body,
	}, env)
	if err != nil {
		return "", nil, fmt.Errorf("render: %w", err)
	}
	sendURL := target.String()
	if len(rendered.Query) > 0 {
		if sendURL, err = template.PlaceQuery(sendURL, rendered.Query); err != nil {
			return "", nil, fmt.Errorf("place the query credentials: %w", err)
		}
	}
	var b strings.Builder
	b.WriteString(sendURL)
	b.WriteByte('\n')
	for _, h := range rendered.Headers {
		b.WriteString(h.Name)
		b.WriteString(": ")
		b.WriteString(h.Value)
		b.WriteByte('\n')
	}
	return b.String(), nil, nil
}

// readRequirementFile reads a requirement document (at most
// requirement.MaxSize bytes) from name, or stdin for "-".
func readRequirementFile(stdin io.Reader, name string) ([]byte, error) {
	if name == "-" {
		return readBounded(stdin, requirement.MaxSize, "standard input")
	}
	f, err := openRegular(name)
	if err != nil {
		return nil, fmt.Errorf("--requirement: %w", err)
	}
	defer f.Close()
	return readBounded(f, requirement.MaxSize, name)
}

func readBodyFile(name string) ([]byte, error) {
	f, err := openRegular(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readBounded(f, wire.MaxNetRequestBody, name)
}

// openRegular opens name for reading, refusing anything but a regular file
// (opening a FIFO would block, so it is looked at before it is opened), and
// a file swapped between that look and the open. The caller closes it.
func openRegular(name string) (*os.File, error) {
	before, err := os.Stat(name)
	if err != nil {
		return nil, err
	}
	if !before.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", name)
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && !os.SameFile(before, fi) {
		err = fmt.Errorf("%s changed while being opened", name)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// renderTarget checks the request as the executor's gates would before a
// credential is placed: gate 1's shape rules (the frame's exact key set) and
// gate 4's ceiling (https, exact host membership in the requirement's
// derived hosts; http only for a LAN requirement's RFC-1918 literal).
// Query credentials are rendered into a URL only after that check.
func renderTarget(req *requirement.Requirement, method, rawURL, body string, hasBody bool) (*url.URL, error) {
	nr := wire.NetRequest{RequestID: "render", InstanceID: "render", URL: rawURL, Method: method, Body: body, HasBody: hasBody}
	if err := nr.Validate(); err != nil {
		var pe *wire.ParseError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("the request would be refused: %s", pe.Message)
		}
		return nil, fmt.Errorf("the request would be refused: %w", err)
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, errors.New("--url does not parse")
	}
	u.Fragment, u.RawFragment = "", "" // never sent
	host, err := requirement.NormalizeHost(u.Hostname())
	lan := req.LANHost != nil && requirement.IsRFC1918Literal(u.Hostname())
	if lan {
		host, err = u.Hostname(), nil
	}
	if err != nil {
		return nil, fmt.Errorf("--url: the host is not a DNS hostname the ceiling could hold")
	}
	ceiling := requirement.DeriveAllowedHosts(req)
	if !slices.Contains(ceiling, host) {
		return nil, fmt.Errorf("--url: %s is not one of the requirement's hosts (%s); snugd refuses it before any credential is rendered", host, strings.Join(ceiling, ", "))
	}
	if u.Scheme != "https" && !(lan && u.Scheme == "http") {
		return nil, fmt.Errorf("--url: the scheme must be https")
	}
	return u, nil
}

// plural returns one or many by n.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// isHelp reports whether arg asks for help.
func isHelp(arg string) bool { return arg == "-h" || arg == "--help" || arg == "help" }
