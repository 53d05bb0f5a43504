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
	"strings"
	"time"

	"github.com/toolsearch/toolsearch/config"
	"github.com/toolsearch/toolsearch/gateway"
)

// serveFlags are the flags serve and status share.
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
}

func newServeFlags(name, synopsis string, stderr io.Writer) *serveFlags {
	fs := newFlags(name, synopsis, stderr)
	f := &serveFlags{fs: fs}
	f.configPath = fs.String("c", "", "config `file` (mcpServers JSON with an optional toolsearch key); default: "+strings.Join(config.DefaultPaths(), " or "))
	f.httpAddr = fs.String("http", "", "serve streamable HTTP on `addr` (e.g. 127.0.0.1:7777) instead of stdio")
	f.exposure = fs.String("exposure", "", "what clients see: auto, full, search or dynamic (overrides the file)")
	f.threshold = fs.String("threshold", "", "auto's switch point in percent of the context window, e.g. 10 (overrides the file)")
	f.contextWindow = fs.Int("context-window", 0, "the model's context window in tokens (overrides the file)")
	f.stateDir = fs.String("state-dir", "", "`dir` for cached manifests (overrides the file)")
	f.lazy = fs.Bool("lazy", false, "start stdio servers with a cached manifest only at their first call")
	f.logLevel = fs.String("log-level", "info", "debug, info, warn or error (logs go to stderr)")
	return f
}

// load finds and reads the config and applies the flags. found is false
// when no file exists and none was named: the caller serves the demo.
func (f *serveFlags) load(stderr io.Writer) (cfg *config.Config, found bool, err error) {
	path := *f.configPath
	if path == "" {
		for _, p := range config.DefaultPaths() {
			if _, err := os.Stat(p); err == nil {
				path = p
				break
			}
		}
	}
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
			g.ContextWindow = *f.contextWindow
		case "state-dir":
			g.StateDir = *f.stateDir
		case "lazy":
			g.Lazy = *f.lazy
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
	var level slog.Level
	if err := level.UnmarshalText([]byte(*f.logLevel)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	return slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})), nil
}

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	f := newServeFlags("serve", "[-c FILE] [--http ADDR] [--exposure MODE] [--check]", stderr)
	check := f.fs.Bool("check", false, "start every server, print its state, tools and tokens and the exposure auto would pick, and exit")
	timeout := f.fs.Duration("timeout", 0, "with --check: how long to wait for the servers (default: the start timeout plus 5s)")
	jsonOut := f.fs.Bool("json", false, "with --check: print JSON")
	if _, code, ok := parseFlags(f.fs, args, stdout); !ok {
		return code
	}
	cfg, found, err := f.load(stderr)
	if err != nil {
		fmt.Fprintf(stderr, "toolsearch serve: %v\n", err)
		return exitUsage
	}
	log, err := f.logger(stderr)
	if err != nil {
		fmt.Fprintf(stderr, "toolsearch serve: %v\n", err)
		return exitUsage
	}
	if *check {
		return checkServers(ctx, cfg, found, *timeout, *jsonOut, stdout, stderr)
	}
	if !found {
		log.Warn("no config file found; serving the embedded demo catalog (searchable; calls say no server is configured)",
			"looked_in", strings.Join(config.DefaultPaths(), ", "), "hint", "toolsearch import writes a config from your MCP client's settings")
	}
	g, err := gateway.New(cfg, gateway.Options{Logger: log, Version: version, Demo: !found})
	if err != nil {
		fmt.Fprintf(stderr, "toolsearch serve: %v\n", err)
		return exitUsage
	}
	ctx, cancel := context.WithCancel(ctx)
	defer func() {
		cancel()
		g.Close()
	}()
	g.Start(ctx)
	mode, reason := g.Exposure()
	log.Info("gateway started", "config", cfg.Path, "servers", len(cfg.Enabled()), "tools_cached", len(g.Snapshot().Tools()),
		"exposure", cfg.Gateway.Exposure, "auto_would_pick", mode, "why", reason)
	if cfg.Gateway.Listen == "" {
		if err := g.ServeStdio(ctx, cfg.Gateway.Exposure); err != nil && ctx.Err() == nil {
			log.Error("stdio session ended", "err", err)
			return 1
		}
		return exitOK
	}
	ln, err := net.Listen("tcp", cfg.Gateway.Listen)
	if err != nil {
		fmt.Fprintf(stderr, "toolsearch serve: %v\n", err)
		return 1
	}
	srv := &http.Server{Handler: g.Handler(cfg.Gateway.Exposure), ReadHeaderTimeout: 10 * time.Second}
	log.Info("serving streamable HTTP", "addr", ln.Addr().String(), "endpoints", "/mcp /mcp/auto /mcp/full /mcp/search /mcp/dynamic /healthz /metrics")
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
		// Close the gateway first: its client sessions end, and with them
		// the event streams that would hold Shutdown to its timeout.
		g.Close()
		sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer scancel()
		_ = srv.Shutdown(sctx)
		return exitOK
	case err := <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(stderr, "toolsearch serve: %v\n", err)
			return 1
		}
		return exitOK
	}
}

// version is reported to clients and servers.
const version = "0.1.0"
