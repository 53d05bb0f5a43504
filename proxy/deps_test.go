package proxy_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestLinksNoSDK: the proxy reads and rewrites request bodies as raw JSON
// (package messages) and links neither an SDK nor the SDK adapter, so the
// command line does not carry them for it.
func TestLinksNoSDK(t *testing.T) {
	t.Parallel()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not installed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, goTool, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, banned := range []string{"github.com/anthropics/anthropic-sdk-go", "github.com/openai/openai-go", "github.com/toolsearch/toolsearch/adapters/anthropic", "github.com/toolsearch/toolsearch/adapters/openai"} {
			if dep == banned || strings.HasPrefix(dep, banned+"/") {
				t.Errorf("package proxy depends on %s", dep)
			}
		}
	}
}
