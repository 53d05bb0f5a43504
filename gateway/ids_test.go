package gateway

import (
	"bufio"
	"encoding/json"
	"io"
	"math/big"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// idCases are JSON-RPC ids a client may send and whether the gateway
// serves them (with the same id back, compared as numbers) or refuses them.
var idCases = []struct {
	id     string
	served bool
}{
	{"7", true}, {`"req-7"`, true}, {"1e3", true}, {"2.0", true}, {"-0", true}, {"9007199254740992", true}, {"-9007199254740992", true},
	{"1.5", false}, {"1e20", false}, {"9007199254740993", false}, {"1.0000000000000001", false}, {"1e999999999", false},
	{"-1e-999999999", false}, {"12345678901234567890123456789012345678901", false},
}

// sameID reports whether got is the id want, numbers compared by value.
func sameID(got json.RawMessage, want string) bool {
	if strings.HasPrefix(want, `"`) {
		return string(got) == want
	}
	a, okA := new(big.Rat).SetString(string(got))
	b, okB := new(big.Rat).SetString(want)
	return okA && okB && a.Cmp(b) == 0
}

// rpcReply reads the JSON-RPC message of a response body (JSON, or the
// data of an event stream).
func rpcReply(t *testing.T, body string) (id json.RawMessage, errMsg string) {
	t.Helper()
	if i := strings.Index(body, "data: "); i >= 0 {
		body = strings.TrimSpace(strings.SplitN(body[i+len("data: "):], "\n", 2)[0])
	}
	var m struct {
		ID    json.RawMessage `json:"id"`
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatalf("not a JSON-RPC message: %q", body)
	}
	if m.Error != nil {
		errMsg = m.Error.Message
	}
	return m.ID, errMsg
}

// TestFloatIDs: the MCP library answers a numeric id with its integer
// part, so a client's id 1.5 would come back as 1, an id another of its
// requests may have. Over HTTP and stdio the gateway refuses every id the
// library would not send back unchanged, with an error of no id that says
// why, and serves the others with the same id.
func TestFloatIDs(t *testing.T) {
	t.Parallel()
	g := startGateway(t, writeConfig(t, map[string]any{"echo": roleServer(t, "echo")}, nil))
	srv := serveHTTP(t, g.Handler("search"))
	withID := func(id string) string { return strings.Replace(initializeBody, `"id":1,`, `"id":`+id+`,`, 1) }

	t.Run("http", func(t *testing.T) {
		t.Parallel()
		for _, tc := range idCases {
			start := time.Now()
			resp, body := rawPost(t, srv.URL+"/mcp", "", withID(tc.id))
			id, msg := rpcReply(t, body)
			switch {
			case tc.served && (resp.StatusCode != http.StatusOK || !sameID(id, tc.id) || msg != ""):
				t.Errorf("id %s: %s, answered with id %s (%s)", tc.id, resp.Status, id, msg)
			case !tc.served && (resp.StatusCode != http.StatusBadRequest || string(id) != "null" || !strings.Contains(msg, "the id ")):
				t.Errorf("id %s: %s, answered with id %s (%s); want 400 and an error of no id", tc.id, resp.Status, id, msg)
			}
			if time.Since(start) > 5*time.Second {
				t.Errorf("id %s took %v", tc.id, time.Since(start))
			}
		}
	})

	t.Run("stdio", func(t *testing.T) {
		t.Parallel()
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		ctx := t.Context()
		go func() { _ = g.Serve(ctx, "search", stdioTransport(inR, outW)) }()
		lines := make(chan string)
		go func() {
			defer close(lines)
			replies := bufio.NewReader(outR)
			for {
				line, err := replies.ReadString('\n')
				if err != nil {
					return
				}
				lines <- line
			}
		}()
		// Each line is answered within seconds, or the test fails.
		exchange := func(line string) (json.RawMessage, string) {
			if _, err := io.WriteString(inW, line+"\n"); err != nil {
				t.Fatal(err)
			}
			select {
			case got, ok := <-lines:
				if !ok {
					t.Fatalf("the session ended after %s", line)
				}
				return rpcReply(t, got)
			case <-time.After(10 * time.Second):
				t.Fatalf("no answer to %s", line)
			}
			return nil, ""
		}
		if id, msg := exchange(withID("1")); string(id) != "1" || msg != "" {
			t.Fatalf("initialize: id %s %s", id, msg)
		}
		if _, err := io.WriteString(inW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
			t.Fatal(err)
		}
		for _, tc := range idCases {
			id, msg := exchange(`{"jsonrpc":"2.0","id":` + tc.id + `,"method":"ping"}`)
			switch {
			case tc.served && (!sameID(id, tc.id) || msg != ""):
				t.Errorf("ping id %s: answered with id %s (%s)", tc.id, id, msg)
			case !tc.served && (string(id) != "null" || !strings.Contains(msg, "the id ")):
				t.Errorf("ping id %s: answered with id %s (%s); want an error of no id", tc.id, id, msg)
			}
		}
		inW.Close()
		outR.Close()
	})

	// What the library does on its own, without the gateway's check: the
	// id 1.5 is answered as 1. When the library keeps ids as sent, this
	// fails, and the check (ids.go) can go.
	t.Run("the library alone", func(t *testing.T) {
		t.Parallel()
		plain := mcp.NewServer(&mcp.Implementation{Name: "plain", Version: "1"}, nil)
		up := serveHTTP(t, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return plain }, nil))
		_, body := rawPost(t, up.URL, "", withID("1.5"))
		if id, _ := rpcReply(t, body); string(id) != "1" {
			t.Errorf("the library answered id 1.5 with id %s", id)
		}
	})
}

func FuzzIDProblem(f *testing.F) {
	for _, c := range idCases {
		f.Add([]byte(`{"jsonrpc":"2.0","id":` + c.id + `,"method":"ping"}`))
	}
	f.Add([]byte(`[{"id":1.5,"method":"ping"},{"id":2,"method":"ping"}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p := messageIDProblem(data) // never panics or hangs
		var m struct {
			ID any `json:"id"`
		}
		if p != "" || json.Unmarshal(data, &m) != nil {
			return
		}
		// A served numeric id is one a float64 holds exactly as an integer.
		if f, ok := m.ID.(float64); ok {
			if f != float64(int64(f)) || f > 1<<53 || f < -(1<<53) {
				t.Fatalf("served id %v of %q", f, data)
			}
		}
	})
}
