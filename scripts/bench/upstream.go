package main

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/snug/snugd/internal/benchdata"
)

// pki writes a CA (dir/ca.pem) and a leaf for upstreamHost signed by it
// (dir/leaf.pem, dir/leaf-key.pem), valid for a day.
func pki(dir string) (caFile, certFile, keyFile string, err error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", "", err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "snugd bench CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return "", "", "", err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return "", "", "", err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", "", err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: upstreamHost},
		DNSNames:     []string{upstreamHost},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return "", "", "", err
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return "", "", "", err
	}
	caFile, certFile, keyFile = filepath.Join(dir, "ca.pem"), filepath.Join(dir, "leaf.pem"), filepath.Join(dir, "leaf-key.pem")
	for _, f := range []struct {
		name, typ string
		der       []byte
	}{{caFile, "CERTIFICATE", caDER}, {certFile, "CERTIFICATE", der}, {keyFile, "PRIVATE KEY", kder}} {
		if err := os.WriteFile(f.name, pem.EncodeToMemory(&pem.Block{Type: f.typ, Bytes: f.der}), 0o600); err != nil {
			return "", "", "", err
		}
	}
	return caFile, certFile, keyFile, nil
}

// runUpstream is "bench upstream -cert F -key F -addr A": an HTTP/1.1 TLS
// server (nginx speaks HTTP/1.1 to upstreams, so all three targets meet the
// same server) answering /small and /big, but only to a request carrying
// the credential. It counts accepted TCP connections; each line "conns" on
// stdin is answered with the count on stdout. It ends when stdin closes.
func runUpstream(args []string) error {
	fs := flag.NewFlagSet("upstream", flag.ContinueOnError)
	cert := fs.String("cert", "", "certificate")
	key := fs.String("key", "", "key")
	addr := fs.String("addr", "", "listen address")
	if err := fs.Parse(args); err != nil {
		return err
	}
	pair, err := tls.LoadX509KeyPair(*cert, *key)
	if err != nil {
		return err
	}
	big := benchdata.Readings(bigBodyBytes) // JSON text, escapes and all
	var conns, refused atomic.Int64
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get(keyHeader) != benchKey {
				refused.Add(1)
				http.Error(w, "no credential", http.StatusUnauthorized)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			switch r.URL.Path {
			case "/small":
				w.Header().Set("Content-Length", strconv.Itoa(len(smallBody)))
				io.WriteString(w, smallBody)
			case "/big":
				w.Header().Set("Content-Length", strconv.Itoa(len(big)))
				w.Write(big)
			default:
				http.NotFound(w, r)
			}
		}),
		TLSConfig:    &tls.Config{Certificates: []tls.Certificate{pair}, NextProtos: []string{"http/1.1"}},
		TLSNextProto: map[string]func(*http.Server, *tls.Conn, http.Handler){}, // HTTP/1.1 only
		ConnState: func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				conns.Add(1)
			}
		},
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
	}
	l, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	go srv.ServeTLS(l, "", "")
	fmt.Println("ready")
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) == "conns" {
			fmt.Printf("%d %d\n", conns.Load(), refused.Load())
		}
	}
	srv.Close()
	return nil
}

// upstream is the running "bench upstream" child.
type upstream struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

func startUpstream(ns, certFile, keyFile string) (*upstream, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("ip", "netns", "exec", ns, self, "upstream", "-cert", certFile, "-key", keyFile, "-addr", upstreamAddr+":443")
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = dieWithParent()
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	u := &upstream{cmd: cmd, in: in, out: bufio.NewReader(outPipe)}
	line, err := u.readLine(10 * time.Second)
	if err != nil || line != "ready" {
		u.stop()
		return nil, fmt.Errorf("upstream did not start: %q %v", line, err)
	}
	return u, nil
}

func (u *upstream) readLine(timeout time.Duration) (string, error) {
	type res struct {
		s   string
		err error
	}
	ch := make(chan res, 1)
	go func() {
		s, err := u.out.ReadString('\n')
		ch <- res{strings.TrimSpace(s), err}
	}()
	select {
	case r := <-ch:
		return r.s, r.err
	case <-time.After(timeout):
		return "", errors.New("upstream did not answer")
	}
}

// conns returns the TCP connections the upstream has accepted so far and
// the requests it refused for a missing credential.
func (u *upstream) conns() (accepted, refused int64, err error) {
	if _, err := io.WriteString(u.in, "conns\n"); err != nil {
		return 0, 0, err
	}
	line, err := u.readLine(5 * time.Second)
	if err != nil {
		return 0, 0, err
	}
	_, err = fmt.Sscan(line, &accepted, &refused)
	return accepted, refused, err
}

func (u *upstream) stop() {
	u.in.Close()
	done := make(chan struct{})
	go func() { u.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		u.cmd.Process.Kill()
		<-done
	}
}
