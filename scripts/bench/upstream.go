package main

import (
	"bufio"
	"bytes"
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
	big := bigJSON(bigBodyBytes)
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

// bigJSON returns /big's body: n bytes of JSON text, an array of small
// objects (sensor readings: a timestamp and a few numbers), padded with
// spaces before its "]" to exactly n bytes. It is what an API returns
// rather than text that needs no escape, so a 1 MiB cell measures the
// escape of a JSON body into the frame: a '"' (escaped to \") every 17
// bytes or so. No denser: a 1 MiB body's escapes must fit the 64 KiB
// margin of the net frame size class (Part I R6), or snugd answers it
// NET_SIZE_EXCEEDED; these come to about 60,000, 5 KiB short of it.
func bigJSON(n int) []byte {
	var b bytes.Buffer
	b.Grow(n)
	b.WriteByte('[')
	var obj []byte
	for i := 0; ; i++ {
		obj = obj[:0]
		if i > 0 {
			obj = append(obj, ',')
		}
		obj = fmt.Appendf(obj, `{"t":%d,"v":[%d.%02d,%d.%02d,1013.%02d,0.%04d,17.%02d,%d.%02d,%d.%d,%d]}`,
			1733011200+60*i, 18+i%9, i%100, 40+i%50, i*7%100, i*3%100, i*37%10000, i*11%100, 3+i%6, i*13%100, 60+i%30, i%10, i*17%1000)
		if b.Len()+len(obj)+1 > n {
			break
		}
		b.Write(obj)
	}
	for b.Len() < n-1 {
		b.WriteByte(' ')
	}
	b.WriteByte(']')
	return b.Bytes()
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
