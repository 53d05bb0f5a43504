package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/toolsearch/toolsearch/core/catalog"
	"github.com/toolsearch/toolsearch/core/hints"
	"github.com/toolsearch/toolsearch/gateway"
	"github.com/toolsearch/toolsearch/gateway/config"
	"github.com/toolsearch/toolsearch/internal/redact"
)

// Where search, tools and lint get their tools, in order: --catalog FILE;
// else the configuration (-c FILE, else the first default path that
// exists), whose servers answer from their cached manifests when these are
// fresh and are started otherwise; else the embedded demo catalog, which
// stderr names.

// sourceHelp explains, in the help of search, tools and lint, where the
// tools come from.
const sourceHelp = `

The tools are those of --catalog FILE; else those of your config's servers
(-c FILE, else the first default path that exists), as serve would show
them (policy applies): a server whose cached manifest in the state
directory is younger than --max-age answers from it, the others are started
and stopped again, with a line per server on stderr (starting, its tools,
or why it failed; one still starting after --timeout is left out); else,
with no config at all, the embedded demo catalog (stderr says so).`

// Defaults of the flags that bound reading a configuration's servers.
const (
	defaultSourceTimeout = 10 * time.Second
	defaultMaxAge        = 24 * time.Hour
)

// sourceFlags are the flags that choose where the tools come from.
type sourceFlags struct {
	catalog, hints, config *string
	timeout, maxAge        *time.Duration
	refresh                *bool
}

func addSourceFlags(fs *flag.FlagSet) *sourceFlags {
	return &sourceFlags{
		catalog: fs.String("catalog", "", "catalog `file` (collected or plain format) instead of the config's servers"),
		hints:   fs.String("hints", "", hintsHelp),
		config:  configFlag(fs),
		timeout: fs.Duration("timeout", defaultSourceTimeout, "how long to wait for the config's servers to start; one still starting then is left out, with the reason on stderr"),
		maxAge: fs.Duration("max-age", defaultMaxAge, "a server whose cached manifest (in the state directory) is younger than `D` is not started: "+
			"its cached tools answer"),
		refresh: fs.Bool("refresh", false, "start every server of the config, whatever its cache"),
	}
}

// load returns the snapshot to search, with what the --hints file did.
// Progress and notes go to stderr; stdout is left to the command.
func (f *sourceFlags) load(ctx context.Context, cmd string, stderr io.Writer) (*catalog.Snapshot, hints.Report, error) {
	if *f.catalog != "" {
		return loadCatalog(cmd, *f.catalog, *f.hints, stderr)
	}
	path, found := configPath(*f.config, false)
	switch {
	case *f.config != "" && !found:
		return nil, hints.Report{}, fmt.Errorf("config file %s does not exist", *f.config)
	case !found:
		fmt.Fprintf(stderr, "toolsearch %s: no config file (looked in %s): using the embedded demo catalog; "+
			"give one with -c FILE, or write one with toolsearch import\n", cmd, strings.Join(config.DefaultPaths(), ", "))
		return loadCatalog(cmd, "", *f.hints, stderr)
	}
	cfg, err := config.Load(path)
	if err != nil {
		return nil, hints.Report{}, err
	}
	if cfg.Gateway.StateDir == "" {
		cfg.Gateway.StateDir = config.DefaultStateDir()
	}
	maxAge := *f.maxAge
	if *f.refresh {
		maxAge = 0
	}
	if *f.timeout <= 0 {
		return nil, hints.Report{}, fmt.Errorf("--timeout is %v; it must be positive", *f.timeout)
	}
	snap, err := configuredSnapshot(ctx, cfg, maxAge, *f.timeout, stderr)
	if err != nil {
		return nil, hints.Report{}, err
	}
	if *f.hints == "" {
		return snap, hints.Report{}, nil
	}
	set, err := hints.LoadFile(*f.hints)
	if err != nil {
		return nil, hints.Report{}, err
	}
	snap, rep, err := set.Apply(snap)
	if err != nil {
		return nil, rep, err
	}
	fmt.Fprintf(stderr, "toolsearch %s: hints %s: %s\n", cmd, *f.hints, rep)
	return snap, rep, nil
}

// configuredSnapshot returns the tools clients of a gateway serving cfg
// could see: every server's, from its cached manifest when it is younger
// than maxAge, else from the server itself, started and stopped here, with
// its progress on stderr; policy applies. A server that fails or does not
// start within wait is left out, and stderr says why.
func configuredSnapshot(ctx context.Context, cfg *config.Config, maxAge, wait time.Duration, stderr io.Writer) (*catalog.Snapshot, error) {
	// Nothing printed shows a secret of the configuration: a server's
	// error may echo its env or headers.
	stderr = redact.New(cfg.Secrets()...).Writer(stderr)
	cfg.Gateway.Lazy = false
	cfg.Gateway.Enrich.Enabled = false // a search asks no model
	for _, s := range cfg.Servers {
		s.Lazy = false
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	g, err := gateway.New(cfg, gateway.Options{Logger: log, Version: buildVersion(), CacheFresh: maxAge})
	if err != nil {
		return nil, err
	}
	rctx, cancel := context.WithCancel(ctx)
	g.Start(rctx)
	watchStarts(ctx, g, wait, stderr)
	cancel()
	g.Close()
	if ctx.Err() != nil {
		return nil, errors.New("interrupted")
	}
	return visibleSnapshot(g)
}

// visibleSnapshot is the gateway's catalog without the tools policy
// hides.
func visibleSnapshot(g *gateway.Gateway) (*catalog.Snapshot, error) {
	var servers []*catalog.Server
	for _, srv := range g.Snapshot().Servers() {
		s := *srv
		s.Tools = nil
		for _, t := range srv.Tools {
			if g.Visible(t) {
				s.Tools = append(s.Tools, t)
			}
		}
		if len(s.Tools) > 0 {
			servers = append(servers, &s)
		}
	}
	return catalog.NewSnapshot(servers...)
}
