package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolsearch/toolsearch/gateway"
	"github.com/toolsearch/toolsearch/internal/redact"
)

// Reloading serve's configuration on SIGHUP (not on Windows, which has no
// such signal): the file is read again with the same flags, and the
// gateway applies it (gateway.Reload): servers added start, removed ones
// stop, changed ones restart, the others keep running and keep their
// sessions. A file that cannot be read or applied is refused with a log
// line naming the problem, and the configuration in force keeps serving.

// reloadHelp is the part of serve's help about SIGHUP.
const reloadHelp = `

On SIGHUP serve reads its config file again, with the same flags: servers
added are started, removed ones stopped, changed ones restarted; the others
keep running and keep their sessions, and clients get list_changed. A file
that cannot be read or applied is refused with a log line saying why, and
the old configuration keeps serving. Settings other than the servers and
the policy take effect at the next start. (Windows has no SIGHUP: restart
serve there.)`

// reloader reads and applies serve's configuration again.
type reloader struct {
	g         *gateway.Gateway
	f         *serveFlags
	log       *slog.Logger
	secrets   *secretWriter
	tokenFile string
	// shutdownTimeout is --shutdown-timeout (0 when not given).
	shutdownTimeout time.Duration
	mu              sync.Mutex // one reload at a time
}

// watchReload reloads the configuration on every signal of sigs until ctx
// ends. Signals that come during a reload are folded into one more.
func (r *reloader) watchReload(ctx context.Context, sigs <-chan os.Signal) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-sigs:
			r.reload(ctx)
		}
	}
}

// reload reads the configuration file again and applies it.
func (r *reloader) reload(ctx context.Context) {
	r.mu.Lock()
	defer r.mu.Unlock()
	path := *r.f.configPath
	cfg, found, err := r.f.load(io.Discard)
	switch {
	case err != nil:
		r.log.Error("config reload refused: the new configuration cannot be read; the old one keeps serving", "err", err)
		return
	case !found:
		r.log.Error("config reload refused: no config file is there any more; the old configuration keeps serving",
			"config", path)
		return
	}
	if d := r.shutdownTimeout; d > 0 {
		cfg.Gateway.Serve.ShutdownTimeout = d
	}
	if cfg.Gateway.Listen != "" {
		if err := resolveAuthToken(cfg, r.tokenFile); err != nil {
			r.log.Error("config reload refused; the old configuration keeps serving", "config", cfg.Path, "err", err)
			return
		}
	}
	r.secrets.add(cfg.Secrets()...)
	d, err := r.g.Reload(ctx, cfg)
	if err != nil {
		r.log.Error("config reload refused; the old configuration keeps serving", "config", cfg.Path, "err", err)
		return
	}
	r.log.Info("config reloaded", "config", cfg.Path, "changes", d.String())
	if len(d.Unapplied) > 0 {
		r.log.Warn("some changed settings take effect only when serve restarts; they keep their old values",
			"settings", "toolsearch."+strings.Join(d.Unapplied, ", toolsearch."))
	}
}

// secretWriter redacts the secrets of every configuration serve has read
// from what it writes: a reload adds those of the new one.
type secretWriter struct {
	w       io.Writer
	mu      sync.Mutex
	secrets []string
	red     atomic.Pointer[redact.Redactor]
}

func newSecretWriter(w io.Writer, secrets ...string) *secretWriter {
	s := &secretWriter{w: w}
	s.add(secrets...)
	return s
}

// add redacts secrets too from now on.
func (s *secretWriter) add(secrets ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.secrets = append(s.secrets, secrets...)
	s.red.Store(redact.New(s.secrets...))
}

func (s *secretWriter) Write(p []byte) (int, error) {
	return s.red.Load().Writer(s.w).Write(p)
}
