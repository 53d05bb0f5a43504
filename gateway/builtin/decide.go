package builtin

import (
	"fmt"
	"strings"
)

// Which built-in tools a client is shown, and why.
//
// The configuration says which tools exist (Config, Definitions); Decide
// says which of them one client sees. The rules, in order, for each tool:
//
//  1. Set to false in the configuration: off.
//  2. Not usable as configured: web_fetch and web_search until configured,
//     lsp without a language server, the resource tools while no upstream
//     server declares resources.
//  3. A client that has tools of its own for the same jobs (Claude Code,
//     Codex, VS Code: the caller tells, see Client.OwnTools) gets none,
//     unless the configuration sets the tool explicitly (true or an
//     object): two greps in one tool list make the model pick at random.
//  4. The file tools (glob, grep, lsp) need roots: the client's MCP roots
//     when it has declared some, else the configured builtins.roots.
//     Without either they could only fail, so they are not shown.
//
// Decide reads nothing but its arguments, so the same client facts and
// configuration always give the same answer: a tool list of MCP
// 2026-07-28, which must not vary per connection, is decided from what
// each request says (its clientInfo name, for OwnTools) and the
// configuration, never from the connection.

// Client is what the caller knows of a client, for Decide.
type Client struct {
	// Name is how the client names itself (clientInfo), for the reasons
	// only: whether it has tools of its own is OwnTools.
	Name string
	// OwnTools is whether the client has file, web and resource tools of
	// its own.
	OwnTools bool
	// Roots are the client's MCP roots (file:// URIs or paths); empty when
	// it declared none, or its requests carry none (MCP 2026-07-28).
	Roots []string
}

// Decision is whether one built-in tool is shown to a client, and why.
type Decision struct {
	Tool   string `json:"tool"`
	On     bool   `json:"on"`
	Reason string `json:"reason"`
}

// Tools are the names of every built-in tool, in the order Definitions
// lists them.
var Tools = []string{Glob, Grep, LSP, WebFetch, WebSearch, ListResources, ReadResource}

// Decide says, for each built-in tool in Tools order, whether client c is
// shown it; resources is whether some upstream server declares the
// resources capability.
func (s *Set) Decide(c Client, resources bool) []Decision {
	cfg := s.cfg
	out := make([]Decision, 0, len(Tools))
	for _, name := range Tools {
		var sw Switch
		usable, why := true, ""
		fileTool := false
		switch name {
		case Glob:
			sw, fileTool = cfg.Glob, true
		case Grep:
			sw, fileTool = cfg.Grep, true
		case LSP:
			sw, fileTool = cfg.LSP.Switch, true
			if s.lsp == nil {
				usable, why = false, "no language server: name one in builtins.lsp, or put gopls on PATH for Go"
			}
		case WebFetch:
			sw = cfg.WebFetch.Switch
			if !sw.Explicit {
				usable, why = false, `off until configured: set builtins.web_fetch to true, or to {"allow": [...]} to name the sites it may read`
			}
		case WebSearch:
			sw = cfg.WebSearch.Switch
			if !sw.Explicit {
				usable, why = false, `off until configured: set builtins.web_search to {"provider": "searxng", "url": ...} or {"provider": "brave", "key": ...}`
			}
		case ListResources, ReadResource:
			sw = cfg.Resources
			if !resources {
				usable, why = false, "no upstream server declares resources"
			}
		}
		key := name
		if name == ListResources || name == ReadResource {
			key = "resources"
		}
		d := Decision{Tool: name}
		switch {
		case !sw.Enabled && sw.Explicit:
			d.Reason = fmt.Sprintf("set to false in the configuration (builtins.%s)", key)
		case !usable:
			d.Reason = why
		case !sw.Enabled:
			d.Reason = "off"
		case c.OwnTools && !sw.Explicit:
			d.Reason = fmt.Sprintf("client %q has tools of its own for this; set builtins.%s to true to show it anyway", c.Name, key)
		case fileTool:
			d.On, d.Reason = s.rootsReason(c, key)
		case sw.Explicit:
			d.On, d.Reason = true, fmt.Sprintf("on: set in the configuration (builtins.%s)", key)
		default:
			d.On, d.Reason = true, "on by default"
			if key == "resources" {
				d.Reason = "on: an upstream server declares resources"
			}
		}
		out = append(out, d)
	}
	return out
}

// rootsReason decides a file tool by the roots it would work in.
func (s *Set) rootsReason(c Client, key string) (bool, string) {
	how := "on by default"
	if c.OwnTools {
		how = fmt.Sprintf("on (builtins.%s is set, though client %q has its own)", key, c.Name)
	}
	if n := len(s.clientRootDirs(c.Roots, false)); n > 0 {
		return true, fmt.Sprintf("%s, in the client's %d root%s", how, n, plural(n))
	}
	if s.rootsErr == nil && !s.roots.Empty() {
		return true, fmt.Sprintf("%s, in the configured roots (builtins.roots: %s)", how, strings.Join(s.roots.Dirs(), ", "))
	}
	if len(c.Roots) > 0 {
		return false, "none of the client's roots is a readable local folder, and builtins.roots names none"
	}
	return false, "no roots: the client declares none and builtins.roots names no readable folder"
}

// Hidden returns the names of the built-in tools that Decide turns off
// for c (whatever the configuration makes available), so that the caller
// can leave them out of what c is shown.
func (s *Set) Hidden(c Client) map[string]bool {
	out := map[string]bool{}
	for _, d := range s.Decide(c, true) {
		if !d.On {
			out[d.Tool] = true
		}
	}
	return out
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// UsesRoots reports whether some file tool is available, so that a
// client's roots can change what it is shown.
func (s *Set) UsesRoots() bool {
	return s.cfg.Glob.Enabled || s.cfg.Grep.Enabled || s.lsp != nil
}
