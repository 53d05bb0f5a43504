package main

import (
	"fmt"
	"io"
	"log/slog"
)

// logFormatHelp is the help of --log-format, the same on every command
// that logs.
const logFormatHelp = "text or json (slog's handlers, one record a line; logs go to stderr)"

// newLogger returns the logger of a command that logs: to w, from level
// (debug, info, warn or error) up, as text or as JSON.
func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: l}
	switch format {
	case "text", "":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", format)
}
