// Package redistest starts a real redis-server for tests: on a free
// loopback port, with no persistence, stopped when the test ends. A test
// that needs one skips, saying why, when redis-server is not installed.
package redistest

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
)

// Server is one redis-server process a test started.
type Server struct {
	t    testing.TB
	bin  string
	port int
	args []string

	// tls is how a client reaches a server started by StartTLS (nil
	// for plain TCP).
	tls *tls.Config
	// CAFile is the PEM file of the CA that signed a StartTLS server's
	// certificate ("" for plain TCP).
	CAFile string

	mu  sync.Mutex
	cmd *exec.Cmd
}

// Start starts a redis-server on a free loopback port, or skips the test
// when there is none to start. It is stopped at the end of the test. args
// are more of its options, such as "--requirepass", "secret".
func Start(t testing.TB, args ...string) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server is not installed (apt-get install redis-server); skipping the test that needs a real Redis")
	}
	s := &Server{t: t, bin: bin, port: freePort(t), args: args}
	s.Restart()
	t.Cleanup(s.Kill)
	return s
}

// StartTLS is Start for a server that speaks only TLS (rediss://), with a
// certificate for 127.0.0.1 from a CA of its own, made for the test:
// CAFile is that CA. Clients need not present a certificate.
func StartTLS(t testing.TB, args ...string) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server is not installed (apt-get install redis-server); skipping the test that needs a real Redis")
	}
	dir := t.TempDir()
	ca, cert, key, err := writeCerts(dir)
	if err != nil {
		t.Fatalf("make the test certificates: %v", err)
	}
	pem, err := os.ReadFile(ca)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	s := &Server{t: t, bin: bin, port: freePort(t), CAFile: ca,
		tls: &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}}
	s.args = append([]string{"--tls-cert-file", cert, "--tls-key-file", key, "--tls-ca-cert-file", ca,
		"--tls-auth-clients", "no"}, args...)
	s.Restart()
	t.Cleanup(s.Kill)
	return s
}

// Addr is host:port of the server.
func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

// URL is the server's redis:// URL with database db (rediss:// for a
// server started by StartTLS).
func (s *Server) URL(db int) string {
	scheme := "redis"
	if s.tls != nil {
		scheme = "rediss"
	}
	return fmt.Sprintf("%s://%s/%d", scheme, s.Addr(), db)
}

// Do sends one command to the server, on a connection of its own, and
// returns its reply as redigo reads it: []byte, int64, string, []any or
// nil, which redigo's helpers (redis.Bytes, redis.Strings, ...) convert.
// A test uses it to look at or alter what the code under test stored. It
// logs in with the --requirepass the server was started with, if any.
func (s *Server) Do(cmd string, args ...any) (any, error) {
	const timeout = 10 * time.Second
	opts := []redis.DialOption{redis.DialConnectTimeout(timeout), redis.DialReadTimeout(timeout), redis.DialWriteTimeout(timeout)}
	if s.tls != nil {
		opts = append(opts, redis.DialUseTLS(true), redis.DialTLSConfig(s.tls))
	}
	for i, a := range s.args {
		if a == "--requirepass" && i+1 < len(s.args) {
			opts = append(opts, redis.DialPassword(s.args[i+1]))
		}
	}
	c, err := redis.Dial("tcp", s.Addr(), opts...)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return c.Do(cmd, args...)
}

// Kill stops the server at once (SIGKILL), as a crash would. Start and
// Restart bring it back on the same port, empty.
func (s *Server) Kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	s.cmd = nil
}

// Restart starts the server again on the same port (after Kill), and
// waits until it answers PING.
func (s *Server) Restart() {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return
	}
	port := []string{"--port", strconv.Itoa(s.port)}
	if s.tls != nil {
		port = []string{"--port", "0", "--tls-port", strconv.Itoa(s.port)}
	}
	cmd := exec.Command(s.bin, append(port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", s.t.TempDir(), "--protected-mode", "yes")...)
	cmd.Args = append(cmd.Args, s.args...)
	cmd.Stdout, cmd.Stderr = nil, nil
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("start redis-server: %v", err)
	}
	s.cmd = cmd
	deadline := time.Now().Add(10 * time.Second)
	for {
		if err := ping(s.Addr(), s.tls); err == nil {
			return
		} else if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			s.cmd = nil
			s.t.Fatalf("redis-server on %s did not answer PING within 10s: %v", s.Addr(), err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ping sends PING in the protocol's inline form and reads +PONG, over
// TLS when tc is not nil.
func ping(addr string, tc *tls.Config) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	var c net.Conn
	var err error
	if tc != nil {
		c, err = (&tls.Dialer{Config: tc}).DialContext(ctx, "tcp", addr)
	} else {
		c, err = (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	}
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	// A server with a password answers NOAUTH: it is up all the same.
	if l := strings.TrimSpace(line); l != "+PONG" && !strings.HasPrefix(l, "-NOAUTH") {
		return fmt.Errorf("PING answered %q", line)
	}
	return nil
}

// freePort asks the kernel for a free loopback port.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("find a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
