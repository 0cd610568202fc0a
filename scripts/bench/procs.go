package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// proc is a serving process whose CPU and memory the run reads from /proc.
type proc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	log  *os.File

	logFile string
}

// logTail returns the end of the process's output, for an error.
func (p *proc) logTail() string {
	b, _ := os.ReadFile(p.logFile)
	if len(b) > 2048 {
		b = b[len(b)-2048:]
	}
	return strings.TrimSpace(string(b))
}

func startProc(name string, cmd *exec.Cmd, logFile string) (*proc, error) {
	f, err := os.Create(logFile)
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = dieWithParent()
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, err
	}
	p := &proc{name: name, cmd: cmd, done: make(chan struct{}), log: f, logFile: logFile}
	go func() { cmd.Wait(); close(p.done) }()
	return p, nil
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM and waits (bounded) before SIGKILL.
func (p *proc) stop() {
	if !p.exited() {
		p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			p.cmd.Process.Kill()
			<-p.done
		}
	}
	p.log.Close()
}

// cpu returns the process's user+system CPU time so far, all threads
// (/proc/PID/stat utime and stime, in clock ticks of 1/100 s).
func (p *proc) cpu() (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.pid()))
	if err != nil {
		return 0, err
	}
	// The command name may hold spaces; the fields after it are fixed.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("unreadable /proc stat")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, errors.New("short /proc stat")
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return time.Duration(ut+st) * (time.Second / clockTicks), nil
}

// clockTicks is USER_HZ, 100 on every Linux this runs on.
const clockTicks = 100

// mem returns VmRSS and VmHWM in bytes.
func (p *proc) mem() (rss, hwm int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.pid()))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		var dst *int64
		switch k {
		case "VmRSS":
			dst = &rss
		case "VmHWM":
			dst = &hwm
		default:
			continue
		}
		kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		*dst = kb << 10
	}
	return rss, hwm, nil
}

// freePort returns a loopback port nobody listens on right now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func dieWithParent() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// ---- nginx ----

// startNginx runs Debian's nginx as one process (master_process off, one
// worker's work in the process itself, so its CPU is one pid's), pinned to
// cpu, proxying everything to the upstream over a keep-alive pool with the
// credential header set, verifying the upstream against the run's CA.
func startNginx(dir, cpu, caFile string) (*proc, string, error) {
	port, err := freePort()
	if err != nil {
		return nil, "", err
	}
	nd := filepath.Join(dir, "nginx")
	if err := os.MkdirAll(filepath.Join(nd, "tmp"), 0o700); err != nil {
		return nil, "", err
	}
	conf := fmt.Sprintf(`worker_processes 1;
master_process off;
daemon off;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path %[1]s/tmp;
  proxy_temp_path %[1]s/tmp;
  fastcgi_temp_path %[1]s/tmp;
  uwsgi_temp_path %[1]s/tmp;
  scgi_temp_path %[1]s/tmp;
  keepalive_requests 100000;
  upstream api {
    server %[2]s:443;
    keepalive 64;
  }
  server {
    listen 127.0.0.1:%[3]d;
    location / {
      proxy_pass https://api;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host %[4]s;
      proxy_set_header %[5]s "%[6]s";
      proxy_ssl_server_name on;
      proxy_ssl_name %[4]s;
      proxy_ssl_verify on;
      proxy_ssl_trusted_certificate %[7]s;
      proxy_ssl_session_reuse on;
      proxy_buffering off;
      proxy_buffer_size 64k;
      proxy_buffers 4 64k;
      proxy_busy_buffers_size 128k;
    }
  }
}
`, nd, upstreamAddr, port, upstreamHost, keyHeader, benchKey, caFile)
	cf := filepath.Join(nd, "nginx.conf")
	if err := os.WriteFile(cf, []byte(conf), 0o600); err != nil {
		return nil, "", err
	}
	bin, err := exec.LookPath("nginx")
	if err != nil {
		bin = "/usr/sbin/nginx"
	}
	p, err := startProc("nginx", exec.Command("taskset", "-c", cpu, bin, "-c", cf, "-p", nd, "-e", filepath.Join(nd, "error.log")), filepath.Join(nd, "stderr.log"))
	if err != nil {
		return nil, "", err
	}
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	if _, err := waitHealthy(p, base+"/small", 10*time.Second); err != nil {
		p.stop()
		return nil, "", fmt.Errorf("nginx: %w", err)
	}
	return p, base, nil
}

// waitHealthy polls url until it answers 200, bounded by timeout and by
// the process exiting, and returns how long that took from now.
func waitHealthy(p *proc, url string, timeout time.Duration) (time.Duration, error) {
	start := time.Now()
	c := &http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}, Timeout: time.Second}
	for time.Since(start) < timeout {
		if p.exited() {
			return 0, fmt.Errorf("%s exited at start: %s", p.name, p.logTail())
		}
		resp, err := c.Get(url)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return time.Since(start), nil
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
	return 0, fmt.Errorf("%s not healthy within %v: %s", p.name, timeout, p.logTail())
}

// ---- snugd ----

type snugd struct {
	*proc
	bin, dataDir, base string
}

// newDataDir makes a data directory with a config.json naming a free port.
func newDataDir(dir string) (string, int, error) {
	port, err := freePort()
	if err != nil {
		return "", 0, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", 0, err
	}
	cfg := fmt.Sprintf(`{"port": %d}`, port)
	return dir, port, os.WriteFile(filepath.Join(dir, "config.json"), []byte(cfg), 0o600)
}

// startSnugd runs the real binary, pinned to cpu, under unshare -m with
// hostsFile bind-mounted over /etc/hosts (private propagation: the mount
// never reaches the machine) and SSL_CERT_FILE naming the run's CA. The
// pid is snugd's own: taskset, unshare and sh each exec the next. It
// returns when GET /v1/health answers, with the time that took.
func startSnugd(bin, dataDir, cpu, hostsFile, caFile, emptyDir string, port int) (*snugd, time.Duration, error) {
	cmd := exec.Command("taskset", "-c", cpu, "unshare", "-m", "--propagation", "private", "sh", "-c",
		`mount --bind "$1" /etc/hosts && exec "$2" run --data-dir "$3"`, "sh", hostsFile, bin, dataDir)
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch strings.ToLower(k) {
		case "http_proxy", "https_proxy", "all_proxy", "no_proxy", "ssl_cert_file", "ssl_cert_dir":
			continue
		}
		env = append(env, kv)
	}
	cmd.Env = append(env, "SSL_CERT_FILE="+caFile, "SSL_CERT_DIR="+emptyDir)
	p, err := startProc("snugd", cmd, filepath.Join(dataDir, "..", filepath.Base(dataDir)+".log"))
	if err != nil {
		return nil, 0, err
	}
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	took, err := waitHealthy(p, base+"/v1/health", 60*time.Second)
	if err != nil {
		p.stop()
		return nil, 0, err
	}
	return &snugd{proc: p, bin: bin, dataDir: dataDir, base: base}, took, nil
}

// ctl runs snugd ctl against the daemon with stdin, bounded in time.
func (s *snugd) ctl(stdin string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.bin, append([]string{"ctl", "--data-dir", s.dataDir}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("snugd ctl %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// call sends one JSON request to the host API.
func (s *snugd) call(method, path, token string, body any, out any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var r io.Reader
	if body != nil {
		j, err := json.Marshal(body)
		if err != nil {
			return err
		}
		r = bytes.NewReader(j)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.base+path, r)
	if err != nil {
		return err
	}
	if r != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := (&http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s = %d %s", method, path, resp.StatusCode, data)
	}
	if out != nil {
		return json.Unmarshal(data, out)
	}
	return nil
}

// benchRequirement is the api_key connection both proxies serve: the key
// goes into one header, as nginx's proxy_set_header does.
const benchRequirement = `{
  "slot": "api",
  "provider": {"name": "Bench API", "homepageUrl": "https://api.bench.test"},
  "kind": "api_key",
  "fields": [{"key": "api_key", "label": "API key", "type": "secret", "required": true}],
  "request": {"headerTemplate": {"X-Api-Key": "{{api_key}}"}},
  "declaredApiHosts": ["api.bench.test"]
}`

const benchApp = "bench-app"

// setUp pairs a host through the API and the ctl, proposes the connection
// (PUT), approves it and sets its key through the ctl, as a user would. It
// returns the host token.
func (s *snugd) setUp() (string, error) {
	vb := make([]byte, 32)
	rand.Read(vb)
	verifier := base64.RawURLEncoding.EncodeToString(vb)
	sum := sha256.Sum256([]byte(verifier))
	var p struct {
		PairingID string `json:"pairingId"`
		Code      string `json:"code"`
	}
	if err := s.call("POST", "/v1/hosts/pair", "", map[string]string{
		"name": "Bench", "surface": "desktop", "challenge": base64.RawURLEncoding.EncodeToString(sum[:]),
	}, &p); err != nil {
		return "", err
	}
	if _, err := s.ctl("", "hosts", "approve", "--yes", p.Code); err != nil {
		return "", err
	}
	var r struct {
		Token string `json:"token"`
	}
	if err := s.call("POST", "/v1/hosts/pair/"+p.PairingID+"/redeem", "", map[string]string{"verifier": verifier}, &r); err != nil {
		return "", err
	}
	if r.Token == "" {
		return "", errors.New("pairing redeemed without a token")
	}
	if err := s.call("PUT", "/v1/apps/"+benchApp+"/connections/api", r.Token, map[string]json.RawMessage{"requirement": json.RawMessage(benchRequirement)}, nil); err != nil {
		return "", err
	}
	if _, err := s.ctl("", "approve", benchApp, "api", "--yes"); err != nil {
		return "", err
	}
	if _, err := s.ctl(fmt.Sprintf(`{"api_key":%q}`, benchKey), "credentials", "set", benchApp, "api"); err != nil {
		return "", err
	}
	return r.Token, nil
}
