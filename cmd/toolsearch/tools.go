package main

import (
	"context"
	"io"
)

func runTools(ctx context.Context, args []string, stdout, stderr io.Writer) int { return exitUsage }
