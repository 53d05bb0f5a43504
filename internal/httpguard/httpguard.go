// Package httpguard is the front door of toolsearch's HTTP endpoints: it
// checks each request before the MCP handler sees it.
//
// In order, a request is refused
//
//   - with 403 when it arrived on a loopback address with a Host header that
//     is not a loopback name nor an allowed host (DNS rebinding: a web page
//     whose name was re-pointed at 127.0.0.1);
//   - with 403 when it carries an Origin header (it comes from a browser)
//     whose host is not loopback and that is not an allowed origin; requests
//     without Origin (command-line and desktop clients) pass;
//   - with 401 when a token is configured and the request does not carry it
//     in one of the token headers (by default "Authorization: Bearer
//     <token>"; compared in constant time), except on open paths, whose
//     handlers learn from Authorized whether the caller proved it knows the
//     token;
//   - with 429 and Retry-After when its MCP session (Mcp-Session-Id, or the
//     client address before a session exists) or all clients together are
//     over their rate;
//   - with 413 when its body is larger than the bound, and 408 when the body
//     does not arrive within the body timeout. The body is read here, so
//     that the MCP handler never waits on a slow client.
//
// Every refusal is a short message that says what to change (text/plain,
// unless Options.WriteError writes it in another shape); none echoes a
// secret.
package httpguard

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Rate is a token bucket: PerSecond requests on average and Burst at once.
// A zero PerSecond is no limit.
type Rate struct {
	PerSecond float64
	Burst     int
}

// Options configure a guard.
type Options struct {
	// Token is the token every request must carry; "" requires none.
	Token string
	// TokenHeaders are the headers that may carry the token; one is
	// enough. "Authorization" means the bearer scheme ("Authorization:
	// Bearer <token>"); any other header carries the token as its whole
	// value. Nil means Authorization only.
	TokenHeaders []string
	// OpenPaths are served without the token (health checks). Their
	// handlers call Authorized to decide how much to say.
	OpenPaths []string
	// AllowedOrigins are the Origin values accepted besides loopback ones:
	// a full origin ("https://app.example.com"), a host name, or "*".
	AllowedOrigins []string
	// AllowedHosts are the Host values accepted on a loopback listener
	// besides loopback names (with or without a port).
	AllowedHosts []string
	// MaxBodyBytes bounds a request body (0: no bound).
	MaxBodyBytes int64
	// BodyTimeout bounds reading a request body (0: 30 seconds).
	BodyTimeout time.Duration
	// Global limits all requests together, PerSession each MCP session.
	Global, PerSession Rate
	// Logger receives one line per kind of refusal at most every ten
	// seconds (nil: none).
	Logger *slog.Logger
	// Names name the server and its settings in refusal messages.
	Names Names
	// WriteError writes a refusal; nil writes the message as text/plain.
	// Headers the guard sets (WWW-Authenticate, Retry-After, Connection)
	// are already in w.Header() when it is called.
	WriteError func(w http.ResponseWriter, status int, msg string)
}

// Names say, in refusal messages, what the server is called and which
// setting widens each check, so that a refusal tells the user what to
// change. Empty fields take the names of toolsearch serve's
// configuration.
type Names struct {
	// Server is what the server is called ("gateway").
	Server string
	// AllowedHosts, AllowedOrigins and MaxBodyBytes name the settings
	// ("toolsearch.http.allowedHosts").
	AllowedHosts, AllowedOrigins, MaxBodyBytes string
}

// withDefaults fills the empty names with serve's.
func (n Names) withDefaults() Names {
	def := func(s *string, v string) {
		if *s == "" {
			*s = v
		}
	}
	def(&n.Server, "gateway")
	def(&n.AllowedHosts, "toolsearch.http.allowedHosts")
	def(&n.AllowedOrigins, "toolsearch.http.allowedOrigins")
	def(&n.MaxBodyBytes, "toolsearch.http.maxBodyBytes")
	return n
}

// Guard is an http.Handler that checks requests and passes the good ones
// to the next handler.
type Guard struct {
	next     http.Handler
	o        Options
	tokenSum [32]byte
	open     map[string]bool
	origins  map[string]bool
	anyOrig  bool
	hosts    map[string]bool
	globalMu sync.Mutex
	global   *bucket
	sessions *buckets
	now      func() time.Time

	logMu  sync.Mutex
	logged map[string]time.Time
	quiet  map[string]int
}

// New returns a guard in front of next.
func New(next http.Handler, o Options) *Guard {
	g := &Guard{next: next, o: o, open: map[string]bool{}, origins: map[string]bool{}, hosts: map[string]bool{},
		now: time.Now, logged: map[string]time.Time{}, quiet: map[string]int{}}
	if o.Token != "" {
		g.tokenSum = sha256.Sum256([]byte(o.Token))
	}
	for _, p := range o.OpenPaths {
		g.open[p] = true
	}
	for _, a := range o.AllowedOrigins {
		a = strings.ToLower(strings.TrimSuffix(strings.TrimSpace(a), "/"))
		if a == "*" {
			g.anyOrig = true
		}
		g.origins[a] = true
	}
	for _, h := range o.AllowedHosts {
		g.hosts[strings.ToLower(strings.TrimSpace(h))] = true
	}
	if g.o.BodyTimeout <= 0 {
		g.o.BodyTimeout = 30 * time.Second
	}
	if len(g.o.TokenHeaders) == 0 {
		g.o.TokenHeaders = []string{"Authorization"}
	}
	g.o.Names = g.o.Names.withDefaults()
	if o.Global.PerSecond > 0 {
		g.global = newBucket(o.Global, g.now())
	}
	if o.PerSession.PerSecond > 0 {
		g.sessions = &buckets{rate: o.PerSession, m: map[string]*bucket{}}
	}
	return g
}

type authKey struct{}

// Authorized reports whether the request proved it knows the token (true
// as well when none is configured). Handlers of open paths use it to
// decide what they may say.
func Authorized(r *http.Request) bool {
	v, _ := r.Context().Value(authKey{}).(bool)
	return v
}

// ServeHTTP checks the request and passes it on.
func (g *Guard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if msg := g.checkHost(r); msg != "" {
		g.refuse(w, r, http.StatusForbidden, "host", msg)
		return
	}
	if msg := g.checkOrigin(r); msg != "" {
		g.refuse(w, r, http.StatusForbidden, "origin", msg)
		return
	}
	authorized := g.o.Token == "" || g.validToken(r)
	if !authorized && !g.open[r.URL.Path] {
		w.Header().Set("WWW-Authenticate", `Bearer realm="toolsearch"`)
		g.refuse(w, r, http.StatusUnauthorized, "auth", g.authMessage())
		return
	}
	r = r.WithContext(context.WithValue(r.Context(), authKey{}, authorized))
	if wait, scope := g.limit(r); wait > 0 {
		secs := int(math.Ceil(wait.Seconds()))
		w.Header().Set("Retry-After", strconv.Itoa(max(1, secs)))
		g.refuse(w, r, http.StatusTooManyRequests, "rate",
			fmt.Sprintf("too many requests (%s rate limit); retry in %d s", scope, max(1, secs)))
		return
	}
	if !g.readBody(w, r) {
		return
	}
	g.next.ServeHTTP(w, r)
}

// validToken reports whether one of the token headers carries the token.
// It compares in constant time (hashes of equal length, so the token's
// length does not leak either).
func (g *Guard) validToken(r *http.Request) bool {
	for _, name := range g.o.TokenHeaders {
		for _, v := range r.Header.Values(name) {
			tok := strings.TrimSpace(v)
			if strings.EqualFold(name, "Authorization") {
				scheme, rest, ok := strings.Cut(tok, " ")
				if !ok || !strings.EqualFold(scheme, "Bearer") {
					continue
				}
				tok = strings.TrimSpace(rest)
			}
			sum := sha256.Sum256([]byte(tok))
			if subtle.ConstantTimeCompare(sum[:], g.tokenSum[:]) == 1 {
				return true
			}
		}
	}
	return false
}

// authMessage says where the token goes.
func (g *Guard) authMessage() string {
	forms := make([]string, len(g.o.TokenHeaders))
	for i, name := range g.o.TokenHeaders {
		if strings.EqualFold(name, "Authorization") {
			forms[i] = `"Authorization: Bearer <token>"`
		} else {
			forms[i] = `"` + name + `: <token>"`
		}
	}
	what, where := "a token", "the header "+forms[0]
	if len(forms) > 1 {
		where = "one of the headers " + strings.Join(forms, ", ")
	} else if strings.EqualFold(g.o.TokenHeaders[0], "Authorization") {
		what = "a bearer token"
	}
	return fmt.Sprintf("toolsearch needs %s here: send %s with the token the %s was started with", what, where, g.o.Names.Server)
}

// checkHost refuses a non-loopback Host on a loopback listener.
func (g *Guard) checkHost(r *http.Request) string {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok || local == nil || !IsLoopbackAddr(local) {
		return ""
	}
	host := strings.ToLower(r.Host)
	if IsLoopbackHost(hostOnly(host)) || g.hosts[host] || g.hosts[hostOnly(host)] {
		return ""
	}
	return fmt.Sprintf("Host %q is not a loopback name; this %s listens on loopback only "+
		"(behind a reverse proxy, add the name to %s)", clip(r.Host), g.o.Names.Server, g.o.Names.AllowedHosts)
}

// checkOrigin refuses a browser origin that is not loopback or allowed.
func (g *Guard) checkOrigin(r *http.Request) string {
	origin := r.Header.Get("Origin")
	if origin == "" || g.anyOrig {
		return ""
	}
	u, err := url.Parse(origin)
	if err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" {
		if IsLoopbackHost(u.Hostname()) {
			return ""
		}
		full := strings.ToLower(u.Scheme + "://" + u.Host)
		if g.origins[full] || g.origins[strings.ToLower(u.Hostname())] || g.origins[strings.ToLower(u.Host)] {
			return ""
		}
	}
	return fmt.Sprintf("Origin %q is not allowed: only loopback origins are, unless listed in %s", clip(origin), g.o.Names.AllowedOrigins)
}

// limit applies the session's and the global rate; it returns how long the
// client should wait, or 0.
func (g *Guard) limit(r *http.Request) (time.Duration, string) {
	now := g.now()
	if g.sessions != nil {
		key := r.Header.Get("Mcp-Session-Id")
		if key == "" {
			key = "addr " + hostOnly(r.RemoteAddr)
		} else {
			key = "session " + key
		}
		if wait := g.sessions.take(key, now); wait > 0 {
			return wait, "per-session"
		}
	}
	if g.global != nil {
		g.globalMu.Lock()
		wait := g.global.take(now)
		g.globalMu.Unlock()
		if wait > 0 {
			return wait, "global"
		}
	}
	return 0, ""
}

// readBody reads the whole body within the bounds and puts it back for
// the next handler. It answers 413 or 408 itself and returns false then.
func (g *Guard) readBody(w http.ResponseWriter, r *http.Request) bool {
	if r.Body == nil || r.Body == http.NoBody {
		return true
	}
	limit := g.o.MaxBodyBytes
	rc := http.NewResponseController(w)
	// giveUp expires the read deadline of a body the guard refuses:
	// net/http would otherwise read what is left of it (up to 256 KiB, at
	// the client's pace, with no deadline) before closing the connection.
	giveUp := func() { _ = rc.SetReadDeadline(time.Unix(1, 0)) }
	if limit > 0 && r.ContentLength > limit {
		giveUp()
		g.tooLarge(w, r)
		return false
	}
	deadlineSet := rc.SetReadDeadline(time.Now().Add(g.o.BodyTimeout)) == nil
	var src io.Reader = r.Body
	if limit > 0 {
		src = io.LimitReader(r.Body, limit+1)
	}
	body, err := io.ReadAll(src)
	if err != nil || (limit > 0 && int64(len(body)) > limit) {
		giveUp()
	} else if deadlineSet {
		_ = rc.SetReadDeadline(time.Time{})
	}
	switch {
	case err != nil && isTimeout(err):
		w.Header().Set("Connection", "close")
		g.refuse(w, r, http.StatusRequestTimeout, "body", fmt.Sprintf("the request body did not arrive within %v", g.o.BodyTimeout))
		return false
	case err != nil:
		w.Header().Set("Connection", "close")
		g.refuse(w, r, http.StatusBadRequest, "body", "reading the request body failed")
		return false
	case limit > 0 && int64(len(body)) > limit:
		g.tooLarge(w, r)
		return false
	}
	_ = r.Body.Close()
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	return true
}

func (g *Guard) tooLarge(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Connection", "close")
	g.refuse(w, r, http.StatusRequestEntityTooLarge, "body",
		fmt.Sprintf("the request body is larger than %d bytes (%s)", g.o.MaxBodyBytes, g.o.Names.MaxBodyBytes))
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, os.ErrDeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

// refuse answers with a status and a message, and logs the refusal (at
// most one line per kind every ten seconds, with the count of the others).
func (g *Guard) refuse(w http.ResponseWriter, r *http.Request, status int, kind, msg string) {
	if g.o.WriteError != nil {
		g.o.WriteError(w, status, msg)
	} else {
		http.Error(w, msg, status)
	}
	if g.o.Logger == nil {
		return
	}
	g.logMu.Lock()
	now := g.now()
	if last, ok := g.logged[kind]; ok && now.Sub(last) < 10*time.Second {
		g.quiet[kind]++
		g.logMu.Unlock()
		return
	}
	n := g.quiet[kind]
	g.logged[kind], g.quiet[kind] = now, 0
	g.logMu.Unlock()
	g.o.Logger.Warn("refused an HTTP request", "status", status, "reason", msg, "method", r.Method, "path", r.URL.Path,
		"remote", r.RemoteAddr, "refused_quietly_before", n)
}

// clip bounds text from a request before it is echoed.
func clip(s string) string {
	if len(s) > 100 {
		return s[:100] + "…"
	}
	return s
}

// hostOnly strips the port from host:port (and the brackets of [::1]).
func hostOnly(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return strings.Trim(hostport, "[]")
}

// Loopback, in one place. An address is loopback when it is an IP in
// 127.0.0.0/8 or ::1, written either way (an IPv4-mapped ::ffff:127.x.y.z
// counts). What is judged depends on what is at hand:
//
//   - an address a listener bound or a connection came from
//     (IsLoopbackAddr) and a listen address before anything listens
//     (IsLoopbackListen) count only as IPs: a name, even "localhost", may
//     resolve anywhere (a hosts file or a resolver can point it elsewhere),
//     so a name is resolved by listening and judged by the address bound;
//   - a Host or Origin header of a request that already arrived on loopback
//     (IsLoopbackHost) may also say "localhost" or "*.localhost", the
//     names a browser itself keeps on loopback.

// isLoopbackIP is the one rule: 127.0.0.0/8 or ::1, IPv4-mapped or not.
func isLoopbackIP(ip netip.Addr) bool { return ip.Unmap().IsLoopback() }

// parseIP parses an IP literal, with or without brackets (a zone, as in
// "::1%lo", is kept).
func parseIP(host string) (netip.Addr, bool) {
	ip, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
	return ip, err == nil
}

// IsLoopbackHost reports whether a Host or Origin header's host (without
// port) is loopback: a loopback IP, or the name "localhost" or a name under
// it ("app.localhost"). It is meant for requests that arrived on a loopback
// listener; to judge where a listener is, use IsLoopbackAddr or
// IsLoopbackListen, which trust no name.
func IsLoopbackHost(host string) bool {
	host = strings.ToLower(host)
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip, ok := parseIP(host)
	return ok && isLoopbackIP(ip)
}

// IsLoopbackAddr reports whether a listener's or connection's address is a
// loopback IP.
func IsLoopbackAddr(a net.Addr) bool {
	if ta, ok := a.(*net.TCPAddr); ok {
		ip, ok := netip.AddrFromSlice(ta.IP)
		return ok && isLoopbackIP(ip)
	}
	if a == nil {
		return false
	}
	ip, ok := parseIP(hostOnly(a.String()))
	return ok && isLoopbackIP(ip)
}

// IsLoopbackListen reports whether a listen address ("host:port") is a
// loopback IP before anything listens on it. A host name, "localhost" too,
// is false: it is judged once resolved, by IsLoopbackAddr of the listener.
// An empty host (":7777", every interface) is false.
func IsLoopbackListen(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	ip, ok := parseIP(host)
	return ok && isLoopbackIP(ip)
}

// ListenAddr returns the address serve listens on for addr: a bare port
// (":7777", "7777") means loopback, 127.0.0.1:7777; anything else is as
// given.
func ListenAddr(addr string) string {
	addr = strings.TrimSpace(addr)
	if _, err := strconv.Atoi(addr); err == nil {
		return "127.0.0.1:" + addr
	}
	if host, port, err := net.SplitHostPort(addr); err == nil && host == "" {
		return net.JoinHostPort("127.0.0.1", port)
	}
	return addr
}

// bucket is a token bucket: a rate.Limiter refilled at the rate's
// PerSecond up to its Burst (at least 1), starting full.
type bucket struct {
	lim   *rate.Limiter
	burst int
}

func newBucket(r Rate, now time.Time) *bucket {
	burst := max(1, r.Burst)
	lim := rate.NewLimiter(rate.Limit(r.PerSecond), burst)
	lim.AllowN(now, 0) // start the clock at now, full
	return &bucket{lim: lim, burst: burst}
}

// take takes a token; when there is none it takes nothing and returns how
// long until there is one.
func (b *bucket) take(now time.Time) time.Duration {
	res := b.lim.ReserveN(now, 1)
	if !res.OK() {
		return time.Hour // a zero rate: no token ever
	}
	if wait := res.DelayFrom(now); wait > 0 {
		res.CancelAt(now)
		return wait
	}
	return 0
}

// full reports whether the bucket has refilled, so that forgetting it
// changes nothing.
func (b *bucket) full(now time.Time) bool {
	return b.lim.TokensAt(now) >= float64(b.burst)
}

// buckets are the per-session buckets; full ones are forgotten now and
// then, so that the map does not grow with every session ever seen.
type buckets struct {
	mu    sync.Mutex
	rate  Rate
	m     map[string]*bucket
	swept time.Time
}

func (bs *buckets) take(key string, now time.Time) time.Duration {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	if now.Sub(bs.swept) > time.Minute || len(bs.m) > 10_000 {
		for k, b := range bs.m {
			if b.full(now) {
				delete(bs.m, k)
			}
		}
		bs.swept = now
	}
	b, ok := bs.m[key]
	if !ok {
		b = newBucket(bs.rate, now)
		bs.m[key] = b
	}
	return b.take(now)
}
