package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/toolsearch/toolsearch/gateway"
	"github.com/toolsearch/toolsearch/gateway/cluster"
	"github.com/toolsearch/toolsearch/gateway/config"
	"github.com/toolsearch/toolsearch/gateway/dashboard"
	"github.com/toolsearch/toolsearch/internal/httpguard"
	"github.com/toolsearch/toolsearch/internal/safefile"
)

// serveFlags are the flags serve and status share (call has the first
// few: newConfigFlags).
type serveFlags struct {
	fs            *flag.FlagSet
	configPath    *string
	httpAddr      *string
	exposure      *string
	threshold     *string
	contextWindow *int
	stateDir      *string
	lazy          *bool
	logLevel      *string
	logFormat     *string
	hints         *string
}

func newServeFlags(name, synopsis string, stderr io.Writer) *serveFlags {
	f := newConfigFlags(name, synopsis, stderr)
	fs := f.fs
	f.httpAddr = fs.String("http", "", "serve streamable HTTP on `addr` instead of stdio; a bare port (:7777) means loopback, 127.0.0.1:7777; "+
		"any other interface (0.0.0.0:7777) needs an auth token or --insecure-no-auth; the live dashboard is at /ui "+
		"(toolsearch.dashboard turns it off)")
	f.exposure = fs.String("exposure", "", "what clients see: auto (decided per client: full for one that defers tools itself, like Claude Code; else by size), "+
		"full, search or dynamic (overrides the file; MCP 2026-07-28 clients get search for dynamic)")
	f.threshold = fs.String("threshold", "", "auto's switch point in percent of the context window, e.g. 10 (overrides the file)")
	f.contextWindow = fs.Int("context-window", 0, "the model's context window in tokens (overrides the file)")
	f.hints = fs.String("hints", "", "search hints `file` applied over the state directory's hints.jsonl (overrides toolsearch.hints)")
	f.lazy = fs.Bool("lazy", false, "start stdio servers with a cached manifest only at their first call")
	return f
}

// newConfigFlags returns the flags every command that starts servers
// reads: the config file, the state directory and logging. The serve-only
// flags stay nil.
func newConfigFlags(name, synopsis string, stderr io.Writer) *serveFlags {
	fs := newFlags(name, synopsis, stderr)
	f := &serveFlags{fs: fs}
	f.configPath = configFlag(fs)
	f.stateDir = fs.String("state-dir", "", "`dir` for cached manifests (overrides the file)")
	f.logLevel = fs.String("log-level", "info", "debug, info, warn or error (logs go to stderr)")
	f.logFormat = fs.String("log-format", "text", logFormatHelp)
	return f
}

// load finds and reads the config and applies the flags. found is false
// when no file exists and none was named: serve and status refuse to run.
func (f *serveFlags) load(stderr io.Writer) (cfg *config.Config, found bool, err error) {
	path, _ := configPath(*f.configPath, false)
	if path == "" {
		cfg = config.Default()
	} else {
		cfg, err = config.Load(path)
		if err != nil {
			return nil, false, err
		}
		found = true
	}
	g := &cfg.Gateway
	var ferr error
	f.fs.Visit(func(fl *flag.Flag) {
		switch fl.Name {
		case "http":
			g.Listen = *f.httpAddr
		case "exposure":
			e, err := config.ParseExposure(*f.exposure)
			if err != nil {
				ferr = err
			}
			g.Exposure = e
		case "threshold":
			p, err := config.ParseThreshold(*f.threshold)
			if err != nil {
				ferr = fmt.Errorf("--threshold: %w", err)
			}
			g.ThresholdPercent = p
		case "context-window":
			if *f.contextWindow < 1000 {
				ferr = fmt.Errorf("--context-window %d is too small", *f.contextWindow)
			}
			if *f.contextWindow > config.MaxContextWindow {
				ferr = fmt.Errorf("--context-window %d is too large (at most %d)", *f.contextWindow, config.MaxContextWindow)
			}
			g.ContextWindow = *f.contextWindow
		case "state-dir":
			g.StateDir = *f.stateDir
		case "lazy":
			g.Lazy = *f.lazy
		case "hints":
			g.Hints = *f.hints
		}
	})
	if ferr != nil {
		return nil, false, ferr
	}
	if g.StateDir == "" && found {
		g.StateDir = config.DefaultStateDir()
	}
	return cfg, found, nil
}

func (f *serveFlags) logger(stderr io.Writer) (*slog.Logger, error) {
	return newLogger(stderr, *f.logLevel, *f.logFormat)
}

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	f := newServeFlags("serve", "[-c FILE] [--http ADDR [--auth-token-file FILE | --insecure-no-auth]] [--exposure MODE] [--check]"+reloadHelp, stderr)
	check := f.fs.Bool("check", false, "start every server, print its state, tools and tokens and the exposure auto would pick, and exit")
	timeout := f.fs.Duration("timeout", 0, "with --check: how long to wait for the servers (default: the start timeout plus 5s)")
	jsonOut := f.fs.Bool("json", false, "with --check: print JSON")
	tokenFile := f.fs.String("auth-token-file", "", "with --http: read the bearer token clients must send from `file` "+
		"(or set $"+authTokenEnv+", or toolsearch.http.authToken); required to listen beyond loopback")
	insecure := f.fs.Bool("insecure-no-auth", false, "with --http: allow listening beyond loopback without a token (anyone who reaches the port can call every tool)")
	shutdownTimeout := f.fs.Duration("shutdown-timeout", 0, "on SIGTERM or SIGINT: how long calls in flight may take to finish before every server is stopped (default 10s, or toolsearch.shutdownTimeout)")
	if _, code, ok := parseFlags(f.fs, args, stdout); !ok {
		return code
	}
	cfg, found, err := f.load(stderr)
	if err != nil {
		fmt.Fprintf(stderr, "toolsearch serve: %v\n", err)
		return exitUsage
	}
	if err := serveable(cfg, found); err != nil {
		fmt.Fprintf(stderr, "toolsearch serve: %v\n", err)
		return exitUsage
	}
	if self := selfEntries(cfg); len(self) > 0 { // self.go
		fmt.Fprintf(stderr, "toolsearch serve: config %s: server %s would run this gateway's own serve, "+
			"which would start itself again without end; remove the entry (or set \"disabled\": true)\n", cfg.Path, strings.Join(self, ", server "))
		return exitUsage
	}
	if *shutdownTimeout > 0 {
		cfg.Gateway.Serve.ShutdownTimeout = *shutdownTimeout
	}
	if cfg.Gateway.Listen != "" {
		if err := resolveAuthToken(cfg, *tokenFile); err != nil {
			fmt.Fprintf(stderr, "toolsearch serve: %v\n", err)
			return exitUsage
		}
	}
	if err := cfg.Gateway.Cluster.KeyProblem; err != nil && cfg.Gateway.Cluster.On() {
		fmt.Fprintf(stderr, "toolsearch serve: %v\n", err)
		return exitUsage
	}
	// The servers serve starts inherit its environment: they need not see
	// the gateway's own token.
	_ = os.Unsetenv(authTokenEnv)
	_ = os.Unsetenv(config.RedisPasswordEnv)
	_ = os.Unsetenv(config.ClusterKeyEnv)
	// From here on, nothing printed shows a secret of the configuration
	// (nor of one a reload reads).
	secrets := newSecretWriter(stderr, cfg.Secrets()...)
	stderr = secrets
	log, err := f.logger(stderr)
	if err != nil {
		fmt.Fprintf(stderr, "toolsearch serve: %v\n", err)
		return exitUsage
	}
	if *check {
		// What Redis access means here (cluster.Open logs the same at
		// serve's start).
		for _, w := range cfg.Gateway.Cluster.Warnings() {
			fmt.Fprintf(stderr, "toolsearch serve: warning: %s\n", w)
		}
		return checkServers(ctx, cfg, found, *timeout, *jsonOut, stdout, stderr)
	}
	if len(cfg.Servers) == 0 {
		log.Warn("the config's "+cfg.ServersKey+" is empty: no MCP server will be served, only the built-in tools that are on",
			"config", cfg.Path, "hint", "toolsearch add NAME -- COMMAND ARGS... adds one")
	}
	opts := gateway.Options{Logger: log, Version: buildVersion()}
	var shared *cluster.Cluster
	if cfg.Gateway.Cluster.On() {
		// Replicas of one service share state through Redis
		// (docs/scale.md); a Redis that does not answer yet is joined
		// when it does.
		shared, err = cluster.Open(ctx, cfg.Gateway.Cluster, log)
		if err != nil {
			fmt.Fprintf(stderr, "toolsearch serve: %v\n", err)
			return exitUsage
		}
		defer shared.Close()
		opts.Cluster = shared
	}
	var dash *dashboard.Dashboard
	if cfg.Gateway.Listen != "" && cfg.Gateway.Dashboard.Enabled {
		// The live dashboard at /ui (docs/dashboard.md).
		dash = dashboard.New(dashboard.FromConfig(cfg.Gateway.Dashboard))
		opts.Feed, opts.UI = dash, dash
	}
	if cfg.Gateway.Tracing.On() {
		// OpenTelemetry traces (docs/tracing.md); the spans still batched
		// are sent once the gateway has stopped.
		tp, err := startTracing(cfg, log)
		if err != nil {
			fmt.Fprintf(stderr, "toolsearch serve: %v\n", err)
			return exitUsage
		}
		defer stopTracing(tp, log)
		opts.TracerProvider = tp
	}
	g, err := gateway.New(cfg, opts)
	if err != nil {
		fmt.Fprintf(stderr, "toolsearch serve: %v\n", err)
		return exitUsage
	}
	var ln net.Listener
	if cfg.Gateway.Listen != "" {
		// Listen once the gateway can answer (New has read the cached
		// lists and counted the built-in tools' tokens, which reads the
		// token counter's vocabulary), and before starting any server: a
		// refused address starts nothing.
		ln, err = listen(cfg, *insecure, log)
		if err != nil {
			g.Close()
			fmt.Fprintf(stderr, "toolsearch serve: %v\n", err)
			return exitUsage
		}
		defer ln.Close()
	}
	// servers is the life of the upstream and language servers, sessions
	// that of the stdio client session: both outlive ctx (the signals) by
	// the drain, and the servers stop first, so that a call cut short
	// still gets its answer to the client.
	servers, stopServers := context.WithCancel(context.WithoutCancel(ctx))
	defer stopServers()
	sessions, stopSessions := context.WithCancel(context.WithoutCancel(ctx))
	defer stopSessions()
	if shared != nil {
		go shared.Run(servers)
	}
	g.Start(servers)
	// SIGHUP reloads the configuration (reload.go).
	hup, stopHup := reloadSignals()
	defer stopHup()
	rl := &reloader{g: g, f: f, log: log, secrets: secrets, tokenFile: *tokenFile, shutdownTimeout: *shutdownTimeout}
	go rl.watchReload(servers, hup)
	mode, reason := g.Exposure()
	log.Info("gateway started", "config", cfg.Path, "servers", len(cfg.Enabled()), "tools_cached", len(g.Snapshot().Tools()),
		"exposure", cfg.Gateway.Exposure, "auto_would_pick", mode, "why", reason)

	if ln == nil {
		served := make(chan error, 1)
		go func() { served <- g.ServeStdio(sessions, cfg.Gateway.Exposure) }()
		select {
		case <-ctx.Done():
			shutdown(g, cfg, log, stopServers)
			stopSessions()
			closeGateway(g, log)
			select {
			case <-served:
			case <-time.After(3 * time.Second):
				// Standard input may stay blocked in a read; exiting ends it.
			}
			log.Info("stopped")
			return exitOK
		case err := <-served:
			// The client went away: nothing is waiting for an answer.
			stopServers()
			closeGateway(g, log)
			if err != nil && sessions.Err() == nil {
				log.Error("stdio session ended", "err", err)
				return 1
			}
			return exitOK
		}
	}

	srv := g.HTTPServer(cfg.Gateway.Exposure)
	endpoints := append(g.Endpoints(cfg.Gateway.Exposure), "/healthz", "/metrics")
	if dash != nil {
		endpoints = append(endpoints, "/ui")
		// Its event streams end first: the HTTP server's shutdown does
		// not wait for them.
		defer dash.Close()
		srv.RegisterOnShutdown(dash.Close)
	}
	log.Info("serving streamable HTTP", "addr", ln.Addr().String(), "endpoints", strings.Join(endpoints, " "),
		"max_sessions", cfg.Gateway.Serve.MaxSessions,
		"auth", cfg.Gateway.Serve.AuthToken != "", "allowed_origins", strings.Join(cfg.Gateway.Serve.AllowedOrigins, ","),
		"rate_limit", rateText(cfg.Gateway.Serve.RateLimit), "session_rate_limit", rateText(cfg.Gateway.Serve.SessionRateLimit))
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
		// Keep serving while calls finish (new ones are refused), then
		// stop the servers, then the sessions (ending their event
		// streams), then the HTTP server.
		shutdown(g, cfg, log, stopServers)
		closeGateway(g, log)
		sctx, scancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer scancel()
		if err := srv.Shutdown(sctx); err != nil {
			_ = srv.Close()
		}
		log.Info("stopped")
		return exitOK
	case err := <-errc:
		stopServers()
		closeGateway(g, log)
		if !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(stderr, "toolsearch serve: %v\n", err)
			return 1
		}
		return exitOK
	}
}

// noConfigHelp tells how to make a config, for the errors of serve.
const noConfigHelp = "make one from your MCP client's settings with\n" +
	"  toolsearch import --from claude-desktop|claude-code|cursor|vscode|windsurf|codex|FILE\n" +
	"or write a commented starter with\n" +
	"  toolsearch init\n" +
	"then run toolsearch serve (or toolsearch serve -c FILE)"

// serveable reports why cfg gives serve nothing to serve: no file was
// found, or the file has no mcpServers (nor VS Code's servers). An
// explicit empty "mcpServers": {} is allowed (serve logs that nothing but
// the built-in tools will be served).
func serveable(cfg *config.Config, found bool) error {
	if !found {
		return fmt.Errorf("no config file (looked in %s); serve needs one that names your MCP servers: %s",
			strings.Join(config.DefaultPaths(), ", "), noConfigHelp)
	}
	if cfg.ServersKey == "" {
		return fmt.Errorf("config %s has no \"mcpServers\" object, so there is nothing to serve: add servers with "+
			"toolsearch add -c %s NAME -- COMMAND ARGS..., or %s", cfg.Path, cfg.Path, noConfigHelp)
	}
	return nil
}

// authTokenEnv names the variable that may hold the HTTP bearer token.
const authTokenEnv = "TOOLSEARCH_AUTH_TOKEN"

// resolveAuthToken sets the HTTP bearer token from, in order, the token
// file, $TOOLSEARCH_AUTH_TOKEN and the file's toolsearch.http.authToken.
// There is no flag that takes the token itself: it would show in ps.
func resolveAuthToken(cfg *config.Config, file string) error {
	sv := &cfg.Gateway.Serve
	tok, err := readToken(file, authTokenEnv)
	switch {
	case err != nil:
		return err
	case tok != "":
		sv.AuthToken = tok
	case sv.AuthTokenProblem != nil:
		return fmt.Errorf("the HTTP auth token cannot be read: %w", sv.AuthTokenProblem)
	}
	return nil
}

// readToken reads a bearer token from the file (--auth-token-file), else
// from the environment variable env; "" when neither is set. There is no
// flag that takes the token itself: it would show in ps.
func readToken(file, env string) (string, error) {
	if file != "" {
		b, err := safefile.ReadFile(file, maxTokenFileBytes)
		if err != nil {
			return "", fmt.Errorf("--auth-token-file: %w", err)
		}
		tok := strings.TrimSpace(string(b))
		if err := config.CheckAuthToken(tok); err != nil {
			return "", fmt.Errorf("--auth-token-file %s: %w", file, err)
		}
		return tok, nil
	}
	if tok := os.Getenv(env); tok != "" {
		if err := config.CheckAuthToken(tok); err != nil {
			return "", fmt.Errorf("$%s: %w", env, err)
		}
		return tok, nil
	}
	return "", nil
}

// listen opens the HTTP listener. A bare port means loopback; an address
// beyond loopback needs a token, or --insecure-no-auth.
func listen(cfg *config.Config, insecure bool, log *slog.Logger) (net.Listener, error) {
	addr := httpguard.ListenAddr(cfg.Gateway.Listen)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	if httpguard.IsLoopbackAddr(ln.Addr()) || cfg.Gateway.Serve.AuthToken != "" {
		return ln, nil
	}
	if !insecure {
		ln.Close()
		return nil, fmt.Errorf("%s listens beyond loopback (%s), where anyone who reaches it could call every tool: "+
			"give clients a bearer token ($%s, --auth-token-file FILE or toolsearch.http.authToken), "+
			"or pass --insecure-no-auth to serve there without one", cfg.Gateway.Listen, ln.Addr(), authTokenEnv)
	}
	log.Warn("serving beyond loopback without authentication (--insecure-no-auth): anyone who reaches this address can call every tool",
		"addr", ln.Addr().String())
	return ln, nil
}

// shutdown stops taking calls and waits for those in flight, up to the
// shutdown timeout (a second signal cuts the wait short); then it stops
// the servers, and waits a moment more for the calls that were cut short
// to send their answers.
func shutdown(g *gateway.Gateway, cfg *config.Config, log *slog.Logger, stopServers context.CancelFunc) {
	d := cfg.Gateway.Serve.ShutdownTimeout
	if d <= 0 {
		d = config.DefaultShutdownTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		select {
		case <-sigs:
			log.Warn("second signal: stopping without waiting for the calls in flight")
			cancel()
		case <-ctx.Done():
		}
	}()
	log.Info("shutting down: new calls are refused; waiting for the calls in flight", "calls", g.InFlight(), "timeout", d)
	left := g.Drain(ctx)
	stopServers()
	if left > 0 {
		log.Warn("calls still running at the shutdown timeout are stopped", "calls", left, "timeout", d)
		actx, acancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer acancel()
		g.Drain(actx)
	}
}

// closeGateway waits for every upstream server and language server to
// stop (their context must be cancelled) and closes the client sessions.
func closeGateway(g *gateway.Gateway, log *slog.Logger) {
	start := time.Now()
	g.Close()
	log.Info("servers stopped", "took", time.Since(start).Round(time.Millisecond))
}

func rateText(r config.Rate) string {
	if !r.On() {
		return "off"
	}
	return fmt.Sprintf("%g/s burst %d", r.PerSecond, r.Burst)
}

// Bounds of the files the commands read besides the config.
const (
	maxTokenFileBytes    = 64 << 10
	maxClientConfigBytes = 64 << 20 // ~/.claude.json grows with history
)
