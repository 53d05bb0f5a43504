package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/toolsearch/toolsearch/internal/httpguard"
	"github.com/toolsearch/toolsearch/internal/redact"
	"github.com/toolsearch/toolsearch/proxy"
)

// proxyTokenEnv names the variable that may hold the proxy's token.
const proxyTokenEnv = "TOOLSEARCH_PROXY_TOKEN"

// proxyOptions are the parsed flags of the proxy command.
type proxyOptions struct {
	cfg      proxy.Config
	listen   string
	insecure bool
}

// parseProxyFlags reads the proxy command's flags. It refuses a --listen
// address beyond loopback without a token or --insecure-no-auth before
// anything listens.
func parseProxyFlags(args []string, stdout, stderr io.Writer) (*proxyOptions, int, bool) {
	fs := newFlags("proxy", "--upstream URL [--listen ADDR [--auth-token-file FILE | --insecure-no-auth]] [--mode auto|passthrough|emulate] [flags]", stderr)
	upstream := fs.String("upstream", "", "base `URL` of the Anthropic-compatible endpoint (required), e.g. https://gateway.example.com")
	listen := fs.String("listen", "127.0.0.1:8787", "`addr` to listen on; a bare port (:8787) means loopback; "+
		"any other interface (0.0.0.0:8787) needs a token or --insecure-no-auth")
	tokenFile := fs.String("auth-token-file", "", "read the token clients must send (as \""+proxy.TokenHeader+": <token>\") from `file` "+
		"(or set $"+proxyTokenEnv+"); required to listen beyond loopback")
	insecure := fs.Bool("insecure-no-auth", false, "allow listening beyond loopback without a token (anyone who reaches the port can use the proxy, and the key it holds)")
	public := fs.Bool("public", false, "deprecated and ignored: listening beyond loopback needs a token or --insecure-no-auth")
	var allowedHosts, allowedOrigins stringList
	fs.Var(&allowedHosts, "allowed-host", "a Host `name` accepted besides loopback names, such as a reverse proxy's (repeatable)")
	fs.Var(&allowedOrigins, "allowed-origin", "a browser `origin` accepted besides loopback ones: https://app.example.com, a host name, or * (repeatable)")
	maxBody := fs.Int64("max-body-bytes", proxy.DefaultMaxBodyBytes, "largest request body accepted (413 above)")
	bodyTimeout := fs.Duration("body-timeout", proxy.DefaultBodyTimeout, "how long a request body may take to arrive (408 after)")
	mode := fs.String("mode", "auto", "passthrough (the upstream supports tool search), emulate (it may not: requests go as sent until the upstream refuses a feature, then lower per model, from inline definitions to tool_addition by reference, to tool_reference without system messages, to no tool search; one retry per refused feature, at most three), or auto")
	toolSearch := fs.String("upstream-tool-search", "unknown", "does the upstream support tool search (defer_loading, tool_reference, server search tools)? yes, no or unknown; auto passes through on yes or Anthropic's own API, emulates otherwise; when emulating, no emulates from the first request and unknown probes (as sent until the upstream refuses it)")
	system := fs.String("upstream-system-messages", "unknown", "does the upstream take {\"role\":\"system\"} messages inside messages? yes, no or unknown; when emulating, no folds them into user text from the first request and unknown probes (folded after the upstream's first refusal, remembered per model)")
	auth := fs.String("auth", "as-sent", "how the key reaches the upstream: as-sent, bearer (Authorization: Bearer) or x-api-key")
	keyEnv := fs.String("api-key-env", "", "name of an environment `variable` whose value replaces the client's key upstream")
	maxResults := fs.Int("max-results", 5, "tools an emulated server-side search loads at most")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error (logs go to stderr; no header value is logged)")
	logFormat := fs.String("log-format", "text", logFormatHelp)
	if _, code, ok := parseFlags(fs, args, stdout); !ok {
		return nil, code, false
	}
	fail := func(format string, a ...any) (*proxyOptions, int, bool) {
		fmt.Fprintf(stderr, "toolsearch proxy: "+format+"\n", a...)
		return nil, exitUsage, false
	}
	if *upstream == "" {
		return fail("--upstream is required")
	}
	o := &proxyOptions{listen: httpguard.ListenAddr(*listen), insecure: *insecure}
	o.cfg.Upstream = *upstream
	var err error
	if o.cfg.Mode, err = proxy.ParseMode(*mode); err != nil {
		return fail("--mode: %v", err)
	}
	if o.cfg.ToolSearch, err = proxy.ParseSupport(*toolSearch); err != nil {
		return fail("--upstream-tool-search: %v", err)
	}
	if o.cfg.SystemMessages, err = proxy.ParseSupport(*system); err != nil {
		return fail("--upstream-system-messages: %v", err)
	}
	if o.cfg.Auth, err = proxy.ParseAuth(*auth); err != nil {
		return fail("--auth: %v", err)
	}
	if *keyEnv != "" {
		o.cfg.APIKey = os.Getenv(*keyEnv)
		if o.cfg.APIKey == "" {
			return fail("--api-key-env: $%s is empty", *keyEnv)
		}
	}
	if o.cfg.Token, err = readProxyToken(*tokenFile); err != nil {
		return fail("%v", err)
	}
	for _, h := range allowedHosts {
		if strings.TrimSpace(h) == "" {
			return fail("--allowed-host: empty host name")
		}
	}
	for _, a := range allowedOrigins {
		if strings.TrimSpace(a) == "" {
			return fail("--allowed-origin: empty origin")
		}
	}
	o.cfg.AllowedHosts, o.cfg.AllowedOrigins = allowedHosts, allowedOrigins
	if *maxBody < 1024 {
		return fail("--max-body-bytes %d is below 1024", *maxBody)
	}
	o.cfg.MaxBodyBytes = *maxBody
	if *bodyTimeout <= 0 {
		return fail("--body-timeout %v: want a positive duration, e.g. 30s", *bodyTimeout)
	}
	o.cfg.BodyTimeout = *bodyTimeout
	o.cfg.MaxResults = *maxResults
	// Nothing logged shows the key or the token.
	stderr = redact.New(o.cfg.APIKey, o.cfg.Token).Writer(stderr)
	logger, err := newLogger(stderr, *logLevel, *logFormat)
	if err != nil {
		return fail("%v", err)
	}
	o.cfg.Logger = logger
	if *public {
		o.cfg.Logger.Warn("proxy: --public is deprecated and ignored: listening beyond loopback needs a token or --insecure-no-auth")
	}
	// A listen address is checked here, before anything listens, when its
	// host says where it is; a host name is checked again once it is
	// resolved (runProxy).
	host, _, err := net.SplitHostPort(o.listen)
	if err != nil {
		return fail("--listen %s: %v", *listen, err)
	}
	if _, perr := netip.ParseAddr(host); host == "" || (perr == nil && !httpguard.IsLoopbackHost(host)) {
		// Every interface, or an IP beyond loopback.
		if err := o.checkListen(*listen, false); err != nil {
			return fail("%v", err)
		}
	}
	return o, 0, true
}

// readProxyToken reads the token from the file, else from
// $TOOLSEARCH_PROXY_TOKEN; "" when neither is set.
func readProxyToken(file string) (string, error) { return readToken(file, proxyTokenEnv) }

// checkListen refuses to serve beyond loopback without a token, unless
// --insecure-no-auth says to.
func (o *proxyOptions) checkListen(addr string, loopback bool) error {
	if loopback || o.cfg.Token != "" || o.insecure {
		return nil
	}
	return fmt.Errorf("--listen %s is beyond loopback, where anyone who reaches the port could use the proxy and the key it holds or forwards: "+
		"give clients a token ($%s or --auth-token-file FILE; they send it as \"%s: <token>\"), "+
		"or pass --insecure-no-auth to serve there without one", addr, proxyTokenEnv, proxy.TokenHeader)
}

// runProxy serves the Messages API proxy until ctx ends.
func runProxy(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, code, ok := parseProxyFlags(args, stdout, stderr)
	if !ok {
		return code
	}
	p, err := proxy.New(o.cfg)
	if err != nil {
		fmt.Fprintf(stderr, "toolsearch proxy: %v\n", err)
		return exitUsage
	}
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		fmt.Fprintf(stderr, "toolsearch proxy: %v\n", err)
		return exitUsage
	}
	if err := o.checkListen(o.listen, httpguard.IsLoopbackAddr(ln.Addr())); err != nil {
		ln.Close()
		fmt.Fprintf(stderr, "toolsearch proxy: %v\n", err)
		return exitUsage
	}
	if !httpguard.IsLoopbackAddr(ln.Addr()) && o.cfg.Token == "" {
		o.cfg.Logger.Warn("proxy: serving beyond loopback without a token (--insecure-no-auth): anyone who reaches this address can use the proxy",
			"addr", ln.Addr().String())
	}
	return serveProxy(ctx, p, ln, o.cfg.Logger)
}

// serveProxy serves p on ln until ctx ends, then shuts down gracefully.
func serveProxy(ctx context.Context, p *proxy.Proxy, ln net.Listener, log *slog.Logger) int {
	srv := p.HTTPServer()
	mode, why := p.Mode()
	log.Info("proxy: listening", "addr", "http://"+ln.Addr().String(), "mode", mode.String(), "why", why)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			log.Error("proxy: serve", "err", err)
			return 1
		}
		return exitOK
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !strings.Contains(err.Error(), "closed") {
		log.Warn("proxy: shutdown", "err", err)
	}
	return exitOK
}
