package linkdevice

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// helperModeEnv makes the test binary act as a helper process: the real
// simulator or one of the hostile helpers below. The supervisor passes
// it through Config.Env, the helper's whole environment.
const helperModeEnv = "LINKDEVICE_TEST_HELPER"

func TestMain(m *testing.M) {
	// The confining command (snugd helper confine) comes first: it runs
	// with the helper's environment, mode included, and then execs it.
	if len(os.Args) > 2 && os.Args[1] == "helper" && os.Args[2] == ConfineCommand {
		os.Exit(RunConfine(os.Args[3:], os.Stderr))
	}
	if mode := os.Getenv(helperModeEnv); mode != "" {
		os.Exit(runTestHelper(mode))
	}
	os.Exit(m.Run())
}

func runTestHelper(mode string) int {
	ctx := context.Background()
	if mode == "sim" {
		if err := RunSim(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return 0
	}
	out := os.Stdout
	h := basicHandler(func(ctx context.Context, method string, params json.RawMessage) (any, error) {
		if method == MethodUnlink && strings.HasPrefix(mode, "escaper") {
			return nil, nil
		}
		switch mode {
		case "garbage":
			io.WriteString(out, "HTTP/1.1 200 OK\r\n\r\n<html>\n")
		case "oversized":
			big := strings.Repeat("A", MaxLine+10)
			io.WriteString(out, `{"jsonrpc":"2.0","method":"link.status","params":{"state":"`+big+`"}}`+"\n")
		case "crash":
			os.Exit(3)
		case "flood":
			for {
				if _, err := io.WriteString(out, `{"jsonrpc":"2.0","method":"link.status","params":{"state":"qr"}}`+"\n"); err != nil {
					os.Exit(0)
				}
			}
		case "wrongtoken": // answers as if any token were fine, leaks it on stderr
			t, err := ParseToken(params)
			if err == nil {
				fmt.Fprintf(os.Stderr, "\x1b[31mgot token %s and secret hunter2\x1b[0m\n", t.Reveal())
				raw, _ := base64.RawURLEncoding.DecodeString(t.Reveal())
				fmt.Fprintf(os.Stderr, "token forms: %s %s %s %s %X\n", base64.StdEncoding.EncodeToString([]byte(t.Reveal())),
					hex.EncodeToString([]byte(t.Reveal())), base64.StdEncoding.EncodeToString(raw), hex.EncodeToString(raw), raw)
				fmt.Fprintln(os.Stderr, strings.Repeat("x", 5000)+t.Reveal())
			}
			return nil, &RPCError{CodeUnauthorized, "bad token " + t.Reveal()}
		}
		<-ctx.Done()
		return nil, ctx.Err()
	})
	if mode == "badversion" {
		h = func(ctx context.Context, method string, params json.RawMessage) (any, error) {
			return map[string]int{"protocolVersion": 99}, nil
		}
	}
	if mode == "exit" {
		return 2
	}
	if mode == "prober" { // tries what a confined helper must not do
		probe()
	}
	if mode == "escaper" || mode == "escaper-exits" { // leaves descendants that try to outlive it
		escape()
		if mode == "escaper-exits" {
			time.Sleep(200 * time.Millisecond)
			return 0
		}
	}
	if mode == "forker" { // a child that keeps our stdout open, then garbage
		child := exec.Command("sleep", "300")
		child.Stdout = os.Stdout
		if err := child.Start(); err != nil {
			return 1
		}
		os.WriteFile("child.pid", []byte(strconv.Itoa(child.Process.Pid)), 0o600)
		h = basicHandler(func(ctx context.Context, method string, params json.RawMessage) (any, error) {
			io.WriteString(out, "garbage\n")
			<-ctx.Done()
			return nil, ctx.Err()
		})
	}
	NewServer(os.Stdin, os.Stdout).Serve(ctx, h)
	time.Sleep(10 * time.Millisecond)
	return 0
}
