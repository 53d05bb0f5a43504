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
	"github.com/toolsearch/toolsearch/core/skills"
	"github.com/toolsearch/toolsearch/gateway"
	"github.com/toolsearch/toolsearch/gateway/config"
	"github.com/toolsearch/toolsearch/internal/redact"
)

// Where search, tools, lint and enrich get their tools, in order:
// --catalog FILE (--catalog demo: the embedded demo catalog); else the
// configuration (-c FILE, else the first default path that exists), whose
// servers answer from their cached manifests when these are fresh and are
// started otherwise; else, for all but enrich, the embedded demo catalog,
// which stderr names.

// sourceHelp explains, in the help of search, tools and lint, where the
// tools come from.
const sourceHelp = `

The tools are those of --catalog FILE (--catalog demo: the embedded demo
catalog); else those of your config's servers (-c FILE, else the first
default path that exists), as serve would show them (policy applies): a
server whose cached manifest in the state directory is younger than
--max-age answers from it, the others are started and stopped again, with
a line per server on stderr (starting, its tools, or why it failed; one
still starting after --timeout is left out); else, with no config at all,
the embedded demo catalog (stderr says so).`

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
	// demoByName: with no config, the demo catalog is not used unless
	// --catalog names it; resolve fails instead.
	demoByName bool
	// skills are the skills the config's servers serve, as clients of
	// serve would see them, once snapshot has read a config (a catalog
	// file holds none).
	skills configSkills
}

// configSkills are the skills of a config's servers: those clients can
// see, and what the gateway reports of them.
type configSkills struct {
	refs  []skills.Ref
	stats gateway.SkillStats
}

// addSourceFlags adds the flags of search, tools and lint.
func addSourceFlags(fs *flag.FlagSet) *sourceFlags {
	f := newSourceFlags(fs, "catalog `file` (collected or plain format) instead of the config's servers; "+demoCatalog+": the embedded demo catalog")
	f.hints = fs.String("hints", "", hintsHelp)
	return f
}

// newSourceFlags adds the source flags but --hints, with catalogHelp as
// the help of --catalog.
func newSourceFlags(fs *flag.FlagSet, catalogHelp string) *sourceFlags {
	return &sourceFlags{
		catalog: fs.String("catalog", "", catalogHelp),
		hints:   new(string),
		config:  configFlag(fs),
		timeout: fs.Duration("timeout", defaultSourceTimeout, "how long to wait for the config's servers to start; one still starting then is left out, with the reason on stderr"),
		maxAge: fs.Duration("max-age", defaultMaxAge, "a server whose cached manifest (in the state directory) is younger than `D` is not started: "+
			"its cached tools answer"),
		refresh: fs.Bool("refresh", false, "start every server of the config, whatever its cache"),
	}
}

// source is where a command's tools come from: a catalog file, the demo
// catalog, or a config's servers.
type source struct {
	// catalog is the --catalog file, or demoCatalog; "" for a config.
	catalog string
	// configPath is the config file and cfg what it says, its state
	// directory filled in as serve fills it; nil for a catalog.
	configPath string
	cfg        *config.Config
}

// String names the source, for a line on stderr.
func (s source) String() string {
	switch {
	case s.cfg != nil:
		return "the servers of " + s.configPath
	case s.catalog == demoCatalog:
		return "the embedded demo catalog"
	}
	return "catalog " + s.catalog
}

// resolve finds the source the flags name, without reading any tools: a
// config is read and checked, its servers are not started.
func (f *sourceFlags) resolve(cmd string, stderr io.Writer) (source, error) {
	if *f.catalog != "" {
		return source{catalog: *f.catalog}, nil
	}
	path, found := configPath(*f.config, false)
	switch {
	case *f.config != "" && !found:
		return source{}, fmt.Errorf("config file %s does not exist", *f.config)
	case !found && f.demoByName:
		return source{}, fmt.Errorf("no config file (looked in %s): give one with -c FILE, or a catalog with --catalog FILE "+
			"(--catalog %s for the embedded demo catalog)", strings.Join(config.DefaultPaths(), ", "), demoCatalog)
	case !found:
		fmt.Fprintf(stderr, "toolsearch %s: no config file (looked in %s): using the embedded demo catalog; "+
			"give one with -c FILE, or write one with toolsearch import\n", cmd, strings.Join(config.DefaultPaths(), ", "))
		return source{catalog: demoCatalog}, nil
	}
	cfg, err := config.Load(path)
	if err != nil {
		return source{}, err
	}
	if cfg.Gateway.StateDir == "" {
		cfg.Gateway.StateDir = config.DefaultStateDir()
	}
	if *f.timeout <= 0 {
		return source{}, fmt.Errorf("--timeout is %v; it must be positive", *f.timeout)
	}
	return source{configPath: path, cfg: cfg}, nil
}

// load returns the snapshot to search, with what the --hints file did.
// Progress and notes go to stderr; stdout is left to the command.
func (f *sourceFlags) load(ctx context.Context, cmd string, stderr io.Writer) (*catalog.Snapshot, hints.Report, error) {
	src, err := f.resolve(cmd, stderr)
	if err != nil {
		return nil, hints.Report{}, err
	}
	return f.snapshot(ctx, cmd, src, stderr)
}

// snapshot reads the tools of src (resolved from f): a catalog file, or
// the config's servers as clients of serve would see them, and applies
// the --hints file, if any.
func (f *sourceFlags) snapshot(ctx context.Context, cmd string, src source, stderr io.Writer) (*catalog.Snapshot, hints.Report, error) {
	if src.cfg == nil {
		return loadCatalog(cmd, src.catalog, *f.hints, stderr)
	}
	maxAge := *f.maxAge
	if *f.refresh {
		maxAge = 0
	}
	snap, sk, err := configuredSnapshot(ctx, src.cfg, maxAge, *f.timeout, stderr)
	f.skills = sk
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
// could see, and its skills: every server's, from its cached manifest when
// it is younger than maxAge, else from the server itself, started and
// stopped here, with its progress on stderr; policy applies. A server that
// fails or does not start within wait is left out, and stderr says why.
func configuredSnapshot(ctx context.Context, cfg *config.Config, maxAge, wait time.Duration, stderr io.Writer) (*catalog.Snapshot, configSkills, error) {
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
		return nil, configSkills{}, err
	}
	rctx, cancel := context.WithCancel(ctx)
	g.Start(rctx)
	watchStarts(ctx, g, wait, stderr)
	cancel()
	g.Close()
	if ctx.Err() != nil {
		return nil, configSkills{}, errors.New("interrupted")
	}
	snap, err := visibleSnapshot(g)
	return snap, configSkills{refs: g.Skills(), stats: g.SkillStats()}, err
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
