package gateway

// What the gateway remembers of multi round-trip calls (mrtr.go): which
// client got each server's requestState, and the 2025 server calls it
// holds for 2026 clients.

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsearch/toolsearch/gateway/upstream"
)

const (
	// holdTimeout is how long a held server request waits for the
	// client's retry.
	holdTimeout = 2 * time.Minute
	// stateTTL is how long a server's requestState can be used for a
	// retry.
	stateTTL = 10 * time.Minute
	// maxStates bounds the states remembered (the oldest go first).
	maxStates = 4096
	// maxRounds bounds the rounds of one call the gateway answers for a
	// 2025 client.
	maxRounds = 10
	// heldStatePrefix starts the requestState of a held call, which the
	// gateway makes itself.
	heldStatePrefix = "toolsearch-held-"
)

// mrtrState is the gateway's memory of multi round-trip calls.
type mrtrState struct {
	mu     sync.Mutex
	states map[string]stateBinding // bindKey(client, state) → binding
	held   map[string]*heldCall    // the gateway's own state → held call
	seq    int64
	// hold is holdTimeout; tests shorten it.
	hold time.Duration
}

func newMRTR() *mrtrState {
	return &mrtrState{states: map[string]stateBinding{}, held: map[string]*heldCall{}, hold: holdTimeout}
}

// stateBinding is what a server's requestState was handed out for.
type stateBinding struct {
	server, tool string
	expires      time.Time
	shared       bool // the cluster has it too (mrtrcluster.go)
}

// bindKey keys a binding: the client and a digest of the state (the state
// itself is not kept).
func bindKey(client, state string) string {
	sum := sha256.Sum256([]byte(client + "\x00" + state))
	return hex.EncodeToString(sum[:])
}

// bindState remembers that client got state from server's tool; shared
// says the cluster has the binding too.
func (m *mrtrState) bindState(client, server, tool, state string, shared bool) {
	if state == "" {
		return
	}
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.states) >= maxStates {
		var oldestKey string
		var oldest time.Time
		for k, b := range m.states {
			if now.After(b.expires) {
				delete(m.states, k)
				continue
			}
			if oldestKey == "" || b.expires.Before(oldest) {
				oldestKey, oldest = k, b.expires
			}
		}
		if len(m.states) >= maxStates {
			delete(m.states, oldestKey)
		}
	}
	m.states[bindKey(client, state)] = stateBinding{server: server, tool: tool, expires: now.Add(stateTTL), shared: shared}
}

// dropState forgets a state once a retry used it.
func (m *mrtrState) dropState(client, state string) {
	if state == "" {
		return
	}
	m.mu.Lock()
	delete(m.states, bindKey(client, state))
	m.mu.Unlock()
}

// heldCall is a call to a 2025 server made for a 2026 client, whose server
// asked the client something: the server's request waits in pending for
// the client's retry.
type heldCall struct {
	m                    *mrtrState
	token                string // the requestState the client was given
	server, tool, client string
	u                    *upstream.Server // the server called
	asks                 chan *heldAsk
	done                 chan heldOutcome
	ended                chan struct{} // closed when the held call is dropped
	endOnce              sync.Once
	cancel               context.CancelFunc // ends the server's call

	mu      sync.Mutex
	pending *heldAsk    // the request the client was shown
	timer   *time.Timer // fires when the client does not retry in time
	relayed bool        // its retries are taken from other replicas too
	unrelay func()      // stops that
}

// heldAsk is one request of the server, waiting for the client's answer.
type heldAsk struct {
	key   string
	req   mcp.InputRequest
	reply chan heldReply
}

type heldReply struct {
	res mcp.InputResponse
	err error
}

// heldOutcome is the end of the server's call, made on ls.
type heldOutcome struct {
	ls       upstream.Conn
	res      *mcp.CallToolResult
	timedOut bool
	err      error
}

// newHeld makes a held call of u's tool for client and registers its
// state.
func (m *mrtrState) newHeld(u *upstream.Server, tool, client string) *heldCall {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	h := &heldCall{m: m, token: heldStatePrefix + hex.EncodeToString(b), server: u.Key(), tool: tool, client: client, u: u,
		asks: make(chan *heldAsk), done: make(chan heldOutcome, 1), ended: make(chan struct{})}
	m.mu.Lock()
	m.held[h.token] = h
	m.mu.Unlock()
	return h
}

// end drops a held call: its state is forgotten, a pending request fails,
// the server's call is cancelled.
func (h *heldCall) end(why error) {
	h.endOnce.Do(func() {
		h.m.mu.Lock()
		delete(h.m.held, h.token)
		h.m.mu.Unlock()
		h.mu.Lock()
		p := h.pending
		h.pending = nil
		if h.timer != nil {
			h.timer.Stop()
		}
		h.mu.Unlock()
		if p != nil {
			p.reply <- heldReply{err: why}
		}
		close(h.ended)
		if h.cancel != nil {
			h.cancel()
		}
		h.mu.Lock()
		unrelay := h.unrelay
		h.mu.Unlock()
		if unrelay != nil {
			unrelay()
		}
	})
}

// ask is the server's side: it hands the request to the client's side of
// the held call and waits for the answer.
func (h *heldCall) ask(ctx context.Context, kind string, r mcp.InputRequest) (mcp.InputResponse, error) {
	h.m.mu.Lock()
	h.m.seq++
	key := fmt.Sprintf("%s-%d", kind, h.m.seq)
	h.m.mu.Unlock()
	a := &heldAsk{key: key, req: r, reply: make(chan heldReply, 1)}
	select {
	case h.asks <- a:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-h.ended:
		return nil, errors.New("the client's call ended")
	}
	select {
	case rep := <-a.reply:
		return rep.res, rep.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
