package config_test

import (
	"fmt"

	"github.com/toolsearch/toolsearch/gateway/config"
)

// env stands for the environment a configuration's ${VAR} read.
func env(name string) (string, bool) {
	v, ok := map[string]string{"GITHUB_TOKEN": "ghp_example", "DOCS_TOKEN": "docs-example"}[name]
	return v, ok
}

// A configuration is the mcpServers JSON clients already use (comments and
// trailing commas allowed), plus the gateway's own settings under
// "toolsearch", defaults filled in.
func ExampleParse() {
	doc := `{
	  // the servers, as a client's file has them
	  "mcpServers": {
	    "github": {"command": "npx", "args": ["-y", "@acme/github-mcp"], "env": {"TOKEN": "${GITHUB_TOKEN}"}},
	    "docs":   {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${DOCS_TOKEN}"}, "naming": "bare"},
	  },
	  "toolsearch": {"exposure": "auto", "threshold": "5%", "limits": {"callTimeout": 90},
	                 "policy": {"deny": ["*/delete_*"]}}
	}`
	cfg, err := config.Parse("toolsearch.json", []byte(doc), env)
	if err != nil {
		panic(err)
	}
	for _, s := range cfg.Servers {
		fmt.Printf("%s: %s, naming %s, env %v\n", s.Key, s.Transport, s.Naming, s.Env)
	}
	g := cfg.Gateway
	fmt.Println("exposure", g.Exposure, "switches past", g.Threshold(), "tokens")
	fmt.Println("call timeout", g.Limits.CallTimeout, "start timeout", g.Limits.StartTimeout)
	fmt.Println("max sessions", g.Serve.MaxSessions, "served exposures", g.Serve.ServedExposures(g.Exposure))
	fmt.Println("secrets to redact:", len(cfg.Secrets()) >= 2)
	// Output:
	// docs: http, naming bare, env map[]
	// github: stdio, naming auto, env map[TOKEN:ghp_example]
	// exposure auto switches past 10000 tokens
	// call timeout 1m30s start timeout 30s
	// max sessions 256 served exposures [auto full dynamic search]
	// secrets to redact: true
}

// A key nothing reads is an error naming its line, its column and the key
// it was likely meant to be; so is a value out of range.
func ExampleParse_errors() {
	for _, doc := range []string{
		`{"mcpServers": {}, "toolsearch": {"exposre": "search"}}`,
		`{"mcpServers": {"db": {"command": "db-mcp", "naming": "short"}}}`,
		`{"mcpServers": {}, "toolsearch": {"limits": {"startTimeout": "30 seconds"}}}`,
	} {
		_, err := config.Parse("toolsearch.json", []byte(doc), env)
		fmt.Println(err)
	}
	// Output:
	// config toolsearch.json: field "toolsearch.exposre": line 1, column 35: unknown key "exposre"; did you mean "exposure"?
	// config toolsearch.json: server "db": field "naming": unknown naming "short" (want auto, bare or prefixed)
	// config toolsearch.json: field "toolsearch.limits.startTimeout": "30 seconds" is not a duration such as "30s"
}

// Every duration is a number of seconds or a Go duration string, from 0
// to 24 hours.
func ExampleParseDuration() {
	for _, raw := range []string{`30`, `0.5`, `"1m30s"`, `null`, `"25h"`} {
		d, err := config.ParseDuration([]byte(raw))
		fmt.Println(raw, d, err)
	}
	// Output:
	// 30 30s <nil>
	// 0.5 500ms <nil>
	// "1m30s" 1m30s <nil>
	// null 0s <nil>
	// "25h" 0s "25h" is longer than 24h0m0s
}
