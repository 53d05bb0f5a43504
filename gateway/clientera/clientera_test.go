package clientera

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestEra(t *testing.T) {
	for v, want := range map[string]string{"": "unknown", "2025-11-25": "session", PerRequestVersion: "per-request", "2027-01-01": "per-request"} {
		if got := Era(v); got != want {
			t.Errorf("Era(%q) = %q, want %q", v, got, want)
		}
	}
}

func TestMetaFacts(t *testing.T) {
	meta := map[string]any{
		mcp.MetaKeyProtocolVersion: PerRequestVersion,
		mcp.MetaKeyClientInfo:      map[string]any{"name": "claude-code", "version": "2.1"},
	}
	if got := MetaClient(meta); got != "claude-code 2.1" {
		t.Errorf("MetaClient = %q", got)
	}
	f := FromMeta(meta)
	if f.Name != "claude-code" || f.Version != "2.1" || f.Protocol != PerRequestVersion || f.At.IsZero() || !f.DefersTools() {
		t.Errorf("FromMeta = %+v", f)
	}
	if MetaImpl(map[string]any{mcp.MetaKeyClientInfo: "not an object"}) != nil {
		t.Error("a clientInfo that is not an Implementation was read")
	}
	var none *Facts
	if none.DefersTools() {
		t.Error("no facts defer tools")
	}
}

func TestCheckMetaSize(t *testing.T) {
	if err := CheckMetaSize(nil); err != nil {
		t.Fatal(err)
	}
	err := CheckMetaSize(map[string]any{"pad": strings.Repeat("x", MaxMetaBytes)})
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams {
		t.Fatalf("an oversize _meta: %v", err)
	}
}

func TestRecent(t *testing.T) {
	var r Recent
	t0 := time.Unix(100, 0)
	if !r.Saw(PerRequestVersion, "a", "search", t0) || r.Saw(PerRequestVersion, "a", "search", t0.Add(time.Second)) {
		t.Fatal("a client is new once")
	}
	for i := range MaxRecent {
		r.Saw(PerRequestVersion, string(rune('b'+i)), "search", t0)
	}
	got := r.Clients()
	if len(got) != MaxRecent || got[0].Client != "b" || got[0].Transport != "http" || got[0].Era != "per-request" {
		t.Fatalf("Clients = %d, first %+v", len(got), got[0])
	}
}
