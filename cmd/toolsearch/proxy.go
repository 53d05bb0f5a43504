package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/toolsearch/toolsearch/proxy"
)

// proxyOptions are the parsed flags of the proxy command.
type proxyOptions struct {
	cfg    proxy.Config
	listen string
	public bool
}

// parseProxyFlags reads the proxy command's flags.
func parseProxyFlags(args []string, stdout, stderr io.Writer) (*proxyOptions, int, bool) {
	fs := newFlags("proxy", "--upstream URL [--listen ADDR] [--mode auto|passthrough|emulate] [flags]", stderr)
	upstream := fs.String("upstream", "", "base `URL` of the Anthropic-compatible endpoint (required), e.g. https://gateway.example.com")
	listen := fs.String("listen", "127.0.0.1:8787", "`addr` to listen on; loopback unless --public")
	public := fs.Bool("public", false, "allow a --listen address that is not loopback")
	mode := fs.String("mode", "auto", "passthrough (the upstream supports tool search), emulate (it does not), or auto")
	toolSearch := fs.String("upstream-tool-search", "unknown", "does the upstream support tool search (defer_loading, tool_reference, server search tools)? yes, no or unknown; auto passes through on yes or Anthropic's own API, emulates otherwise")
	system := fs.String("upstream-system-messages", "unknown", "does the upstream take {\"role\":\"system\"} messages inside messages? yes, no or unknown; when emulating, anything but yes folds them into user text")
	auth := fs.String("auth", "as-sent", "how the key reaches the upstream: as-sent, bearer (Authorization: Bearer) or x-api-key")
	keyEnv := fs.String("api-key-env", "", "name of an environment `variable` whose value replaces the client's key upstream")
	maxResults := fs.Int("max-results", 5, "tools an emulated server-side search loads at most")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error (logs go to stderr; no header value is logged)")
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
	o := &proxyOptions{listen: *listen, public: *public}
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
	o.cfg.MaxResults = *maxResults
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return fail("--log-level: %v", err)
	}
	o.cfg.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	if !o.public && !proxy.IsLoopback(o.listen) {
		return fail("--listen %s is not a loopback address (add --public to serve other machines)", o.listen)
	}
	return o, 0, true
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
	return serveProxy(ctx, p, ln, o.cfg.Logger)
}

// serveProxy serves p on ln until ctx ends, then shuts down gracefully.
func serveProxy(ctx context.Context, p *proxy.Proxy, ln net.Listener, log *slog.Logger) int {
	srv := &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second}
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
