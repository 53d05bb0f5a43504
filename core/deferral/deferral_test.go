package deferral

import (
	"slices"
	"strings"
	"testing"
)

func TestParseMode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    Mode
		wantErr string
	}{
		{in: "", want: Mode{Kind: On}},
		{in: "on", want: Mode{Kind: On}},
		{in: " TRUE ", want: Mode{Kind: On}},
		{in: "off", want: Mode{Kind: Off}},
		{in: "false", want: Mode{Kind: Off}},
		{in: "auto", want: Mode{Kind: Auto, Percent: 10}},
		{in: "auto:5", want: Mode{Kind: Auto, Percent: 5}},
		{in: "AUTO:100", want: Mode{Kind: Auto, Percent: 100}},
		{in: "auto:25%", want: Mode{Kind: Auto, Percent: 25}},
		{in: "auto:0", wantErr: "from 1 to 100, not 0"},
		{in: "auto:150", wantErr: "from 1 to 100, not 150"},
		{in: "auto:-3", wantErr: "from 1 to 100"},
		{in: "auto:abc", wantErr: `"abc" is not a whole percentage`},
		{in: "auto:", wantErr: "not a whole percentage"},
		{in: "auto:2.5", wantErr: "not a whole percentage"},
		{in: "sometimes", wantErr: "want on, off, auto or auto:N"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			got, err := ParseMode(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseMode(%q) error = %v, want it to contain %q", tt.in, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseMode(%q): %v", tt.in, err)
			}
			if got != tt.want {
				t.Fatalf("ParseMode(%q) = %+v, want %+v", tt.in, got, tt.want)
			}
			back, err := ParseMode(got.String())
			if err != nil || back.String() != got.String() {
				t.Fatalf("round trip of %q via %q: %+v, %v", tt.in, got.String(), back, err)
			}
		})
	}
}

func TestModeText(t *testing.T) {
	t.Parallel()
	var m Mode
	if err := m.UnmarshalText([]byte("auto:7")); err != nil {
		t.Fatal(err)
	}
	b, _ := m.MarshalText()
	if string(b) != "auto:7" {
		t.Fatalf("MarshalText = %q", b)
	}
	if err := m.UnmarshalText([]byte("auto:0")); err == nil {
		t.Fatal("UnmarshalText(auto:0) succeeded")
	}
}

// request builds a typical tool list: two built-ins (one asking to be
// deferred), a primary channel, the search tool and n MCP tools of the given
// size, the first of them always-load.
func request(n, tokens int) []Tool {
	tools := []Tool{
		{ID: "read_file", Origin: Builtin, Tokens: 300},
		{ID: "notebook_edit", Origin: Builtin, Defer: true, Tokens: 400},
		{ID: "send_user_message", Origin: Builtin, Primary: true, Defer: true, Tokens: 100},
		{ID: "tool_search", Origin: SearchTool, Tokens: 200},
	}
	for i := range n {
		tools = append(tools, Tool{ID: "srv__t" + string(rune('a'+i)), Origin: MCP, AlwaysLoad: i == 0, Tokens: tokens})
	}
	return tools
}

func TestDecide(t *testing.T) {
	t.Parallel()
	on, off := Mode{Kind: On}, Mode{Kind: Off}
	auto := Mode{Kind: Auto}
	tests := []struct {
		name         string
		in           Input
		wantOn       bool
		wantExpand   bool
		wantDeferred []string
		wantLoaded   []string
		wantWhy      string
	}{
		{
			name:         "mode on defers MCP and self-deferring built-ins",
			in:           Input{Tools: request(3, 100), Mode: on, References: true},
			wantOn:       true,
			wantDeferred: []string{"notebook_edit", "srv__tb", "srv__tc"},
			wantLoaded:   []string{"read_file", "send_user_message", "tool_search", "srv__ta"},
			wantWhy:      "search on (mode on): 3 tools deferred",
		},
		{
			name:       "mode off loads everything but the search tool",
			in:         Input{Tools: request(3, 100), Mode: off, References: true},
			wantLoaded: []string{"read_file", "notebook_edit", "send_user_message", "srv__ta", "srv__tb", "srv__tc"},
			wantWhy:    "search off: mode is off",
		},
		{
			name:       "no references",
			in:         Input{Tools: request(3, 100), Mode: on, NoReferencesWhy: "the proxy drops tool_reference blocks"},
			wantLoaded: []string{"read_file", "notebook_edit", "send_user_message", "srv__ta", "srv__tb", "srv__tc"},
			wantWhy:    "search off: the proxy drops tool_reference blocks",
		},
		{
			name:       "no references, default reason",
			in:         Input{Tools: request(2, 100), Mode: on},
			wantLoaded: []string{"read_file", "notebook_edit", "send_user_message", "srv__ta", "srv__tb"},
			wantWhy:    "does not accept tool references",
		},
		{
			name:         "no references but expand",
			in:           Input{Tools: request(2, 100), Mode: on, Expand: true},
			wantOn:       true,
			wantExpand:   true,
			wantDeferred: []string{"notebook_edit", "srv__tb"},
			wantLoaded:   []string{"read_file", "send_user_message", "tool_search", "srv__ta"},
			wantWhy:      "discovered tools are sent in full",
		},
		{
			name: "auto below threshold",
			// 400 + 2×1000 = 2,400 deferrable tokens, 10% of 200k = 20,000.
			in:         Input{Tools: request(3, 1000), Mode: auto, References: true},
			wantLoaded: []string{"read_file", "notebook_edit", "send_user_message", "srv__ta", "srv__tb", "srv__tc"},
			wantWhy:    "search off (mode auto): the definitions of 3 deferrable tools take 2400 tokens, not more than 10% of the 200000-token context window (20000)",
		},
		{
			name:         "auto above threshold",
			in:           Input{Tools: request(3, 20000), Mode: auto, References: true},
			wantOn:       true,
			wantDeferred: []string{"notebook_edit", "srv__tb", "srv__tc"},
			wantLoaded:   []string{"read_file", "send_user_message", "tool_search", "srv__ta"},
			wantWhy:      "search on (mode auto): the definitions of 3 deferrable tools take 40400 tokens, more than 10% of the 200000-token context window (20000)",
		},
		{
			name:         "auto:1 with a small window",
			in:           Input{Tools: request(2, 100), Mode: Mode{Kind: Auto, Percent: 1}, ContextWindow: 10_000, References: true},
			wantOn:       true,
			wantDeferred: []string{"notebook_edit", "srv__tb"},
			wantLoaded:   []string{"read_file", "send_user_message", "tool_search", "srv__ta"},
			wantWhy:      "more than 1% of the 10000-token context window (100)",
		},
		{
			name:       "exactly at the threshold stays off",
			in:         Input{Tools: []Tool{{ID: "s", Origin: SearchTool}, {ID: "m", Tokens: 20000}}, Mode: auto, References: true},
			wantLoaded: []string{"m"},
			wantWhy:    "not more than 10%",
		},
		{
			name:       "no search tool",
			in:         Input{Tools: request(3, 100)[4:], Mode: on, References: true},
			wantLoaded: []string{"srv__ta", "srv__tb", "srv__tc"},
			wantWhy:    "search off: the request has no search tool",
		},
		{
			name:         "only a self-deferring built-in to defer",
			in:           Input{Tools: request(1, 100), Mode: on, References: true},
			wantOn:       true,
			wantDeferred: []string{"notebook_edit"},
			wantLoaded:   []string{"read_file", "send_user_message", "tool_search", "srv__ta"},
			wantWhy:      "search on (mode on): 1 tool deferred",
		},
		{
			name:       "only always-load and primary",
			in:         Input{Tools: []Tool{{ID: "s", Origin: SearchTool}, {ID: "a", AlwaysLoad: true}, {ID: "p", Origin: Builtin, Primary: true, Defer: true}}, Mode: on, References: true},
			wantLoaded: []string{"a", "p"},
			wantWhy:    "search off: no tool can be deferred",
		},
		{
			name:       "only the search tool stays loaded",
			in:         Input{Tools: []Tool{{ID: "s", Origin: SearchTool}}, Mode: on, References: true},
			wantLoaded: []string{"s"},
			wantWhy:    "search off: no tool can be deferred",
		},
		{
			name:    "no tools",
			in:      Input{Mode: on, References: true},
			wantWhy: "search off: the request has no tools",
		},
		{
			name:       "duplicate IDs",
			in:         Input{Tools: []Tool{{ID: "s", Origin: SearchTool}, {ID: "m"}, {ID: "m"}}, Mode: on, References: true},
			wantLoaded: []string{"m", "m"},
			wantWhy:    `the tool "m" appears twice`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := Decide(tt.in)
			if d.SearchOn != tt.wantOn || d.Expand != tt.wantExpand {
				t.Fatalf("SearchOn, Expand = %v, %v; want %v, %v (%s)", d.SearchOn, d.Expand, tt.wantOn, tt.wantExpand, d.Why())
			}
			if !slices.Equal(d.Deferred, tt.wantDeferred) {
				t.Errorf("Deferred = %q, want %q", d.Deferred, tt.wantDeferred)
			}
			if !slices.Equal(d.Loaded, tt.wantLoaded) {
				t.Errorf("Loaded = %q, want %q", d.Loaded, tt.wantLoaded)
			}
			if !strings.Contains(d.Why(), tt.wantWhy) {
				t.Errorf("Why() = %q, want it to contain %q", d.Why(), tt.wantWhy)
			}
			if got, want := len(d.Reasons), 1+len(tt.in.Tools); got != want {
				t.Errorf("%d reasons, want %d", got, want)
			}
			for i, r := range d.Reasons[1:] {
				if r.Tool != tt.in.Tools[i].ID || r.Text == "" {
					t.Errorf("reason %d = %+v", i, r)
				}
			}
			for _, id := range d.Deferred {
				if !d.IsDeferred(id) {
					t.Errorf("IsDeferred(%q) = false", id)
				}
			}
			for _, id := range d.Loaded {
				if d.IsDeferred(id) {
					t.Errorf("IsDeferred(%q) = true for a loaded tool", id)
				}
			}
		})
	}
}

func TestDecideReasonsReadable(t *testing.T) {
	t.Parallel()
	d := Decide(Input{Tools: request(2, 100), Mode: Mode{Kind: On}, References: true})
	want := []string{
		"search on (mode on): 2 tools deferred",
		"read_file: loaded: a built-in tool is deferred only when it asks to be",
		"notebook_edit: deferred: a built-in tool that asks to be deferred",
		"send_user_message: loaded: the host's primary channel is never deferred",
		"tool_search: loaded: the search tool is never deferred",
		"srv__ta: loaded: marked always-load",
		"srv__tb: deferred: an MCP tool is deferred by default",
	}
	var got []string
	for _, r := range d.Reasons {
		got = append(got, r.String())
	}
	if !slices.Equal(got, want) {
		t.Fatalf("reasons:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// FuzzDecide checks the invariants on arbitrary tool lists: the search tool,
// always-load and primary tools are never deferred, something stays loaded,
// and every tool is either loaded or deferred (or is the search tool with
// search off).
func FuzzDecide(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4}, uint8(0), uint16(100), true, false)
	f.Add([]byte{2, 2, 2}, uint8(2), uint16(0), false, true)
	f.Add([]byte{}, uint8(1), uint16(5), true, true)
	f.Fuzz(func(t *testing.T, spec []byte, mode uint8, window uint16, refs, expand bool) {
		in := Input{Mode: Mode{Kind: Kind(mode % 3), Percent: int(mode) % 101}, ContextWindow: int(window), References: refs, Expand: expand}
		for i, b := range spec {
			in.Tools = append(in.Tools, Tool{
				ID:         string(rune('a'+i%26)) + string(rune('a'+i/26%26)) + string(rune('0'+i/676%10)),
				Origin:     Origin(b % 3),
				Defer:      b&4 != 0,
				AlwaysLoad: b&8 != 0,
				Primary:    b&16 != 0,
				Tokens:     int(b) * 50,
			})
		}
		d := Decide(in)
		if len(in.Tools) > 0 && len(d.Loaded) == 0 {
			t.Fatalf("nothing loaded: %+v", d)
		}
		if !d.SearchOn && len(d.Deferred) > 0 {
			t.Fatalf("deferred with search off: %+v", d)
		}
		if d.SearchOn && d.Expand == refs {
			t.Fatalf("Expand = %v with References = %v", d.Expand, refs)
		}
		for _, tl := range in.Tools {
			if d.IsDeferred(tl.ID) && (tl.Origin == SearchTool || tl.AlwaysLoad || tl.Primary || (tl.Origin == Builtin && !tl.Defer)) {
				t.Fatalf("%+v deferred", tl)
			}
		}
		searchTools := 0
		for _, tl := range in.Tools {
			if tl.Origin == SearchTool {
				searchTools++
			}
		}
		if got := len(d.Loaded) + len(d.Deferred); got > len(in.Tools) || got < len(in.Tools)-searchTools {
			t.Fatalf("%d loaded + %d deferred of %d tools", len(d.Loaded), len(d.Deferred), len(in.Tools))
		}
	})
}
