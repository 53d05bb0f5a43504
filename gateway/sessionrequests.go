package gateway

// Requests the gateway makes of the client in a session the cluster keeps
// (sessionshare.go): roots/list, and the sampling, elicitation and roots
// requests of upstream servers it passes on.
//
// Behind a load balancer that is not sticky, the client's answer to such a
// request may reach any replica, and a request made outside any of the
// client's requests (the gateway's roots/list after initialize) goes on
// the event stream, which another replica may hold. So:
//
//   - each request leaves with an id of its replica's own ("ts.<token>.<n>",
//     the token random per replica and session), and its answer is given
//     back to the session under the id the session chose: two replicas of
//     one session number their requests alike, and an answer must not
//     reach the wrong one;
//   - a request for the event stream that this replica does not hold goes
//     to the replica that does, as notifications do (streamTransport);
//   - an answer this replica did not ask for is published to the replicas
//     of the session (P:reply), where the one that asked takes it.
//
// A replica listens for answers from its first request in a session until
// the session closes there.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxPendingRequests bounds the requests a session's replica remembers
// awaiting an answer; past it the oldest is forgotten (its answer, should
// it come, is dropped as one to no request).
const maxPendingRequests = 256

// streamConn is a shared session's connection (the library's, wrapped).
type streamConn struct {
	mcp.Connection
	t *streamTransport

	token string // this replica's part of its request ids

	mu      sync.Mutex
	seq     uint64
	pending map[jsonrpc.ID]jsonrpc.ID // wire id → the session's id
	wireOf  map[jsonrpc.ID]jsonrpc.ID // the session's id → wire id
	order   []jsonrpc.ID              // wire ids, oldest first
	replies bool                      // listening on P:reply
	stop    func()                    // of that subscription

	pump     sync.Once
	in       chan readResult        // what the library's connection read
	answers  chan *jsonrpc.Response // answers other replicas received
	closed   chan struct{}
	closeOne sync.Once
}

type readResult struct {
	msg jsonrpc.Message
	err error
}

func newStreamConn(c mcp.Connection, t *streamTransport) *streamConn {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return &streamConn{Connection: c, t: t, token: hex.EncodeToString(b[:]),
		pending: map[jsonrpc.ID]jsonrpc.ID{}, wireOf: map[jsonrpc.ID]jsonrpc.ID{},
		answers: make(chan *jsonrpc.Response, 16), closed: make(chan struct{})}
}

// Write sends msg: a request under this replica's id for it, and a
// message for the event stream to the replica holding it.
func (c *streamConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok {
		switch {
		case req.IsCall():
			msg = c.outgoing(ctx, req)
		case req.Method == "notifications/cancelled":
			msg = c.cancelled(req)
		}
	}
	if c.t.sentElsewhere(ctx, msg) {
		return nil
	}
	return c.Connection.Write(ctx, msg)
}

// outgoing gives req a wire id and remembers it, listening for answers
// that reach other replicas.
func (c *streamConn) outgoing(ctx context.Context, req *jsonrpc.Request) *jsonrpc.Request {
	c.listen(ctx)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	wire, _ := jsonrpc.MakeID(fmt.Sprintf("ts.%s.%d", c.token, c.seq)) // a string is always an id
	if len(c.order) >= maxPendingRequests {
		c.forget(c.order[0])
	}
	c.pending[wire], c.wireOf[req.ID] = req.ID, wire
	c.order = append(c.order, wire)
	out := *req
	out.ID = wire
	return &out
}

// cancelled names, in a cancellation of one of the session's requests,
// the request by the id the client was given.
func (c *streamConn) cancelled(req *jsonrpc.Request) jsonrpc.Message {
	var p map[string]any
	if json.Unmarshal(req.Params, &p) != nil {
		return req
	}
	id, err := jsonrpc.MakeID(p["requestId"])
	if err != nil {
		return req
	}
	c.mu.Lock()
	wire, ok := c.wireOf[id]
	if ok {
		c.forget(wire)
	}
	c.mu.Unlock()
	if !ok {
		return req
	}
	p["requestId"] = wire.Raw()
	b, err := json.Marshal(p)
	if err != nil {
		return req
	}
	out := *req
	out.Params = b
	return &out
}

// forget drops the pending request wire. c.mu is held.
func (c *streamConn) forget(wire jsonrpc.ID) {
	delete(c.wireOf, c.pending[wire])
	delete(c.pending, wire)
	for i, w := range c.order {
		if w == wire {
			c.order = append(c.order[:i], c.order[i+1:]...)
			break
		}
	}
}

// take returns the session's id of the answer to wire, if it is this
// replica's request, and forgets the request.
func (c *streamConn) take(wire jsonrpc.ID) (jsonrpc.ID, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	id, ok := c.pending[wire]
	if ok {
		c.forget(wire)
	}
	return id, ok
}

// ours reports whether id has the form of a replica's request id.
func ours(id jsonrpc.ID) bool {
	s, ok := id.Raw().(string)
	return ok && strings.HasPrefix(s, "ts.")
}

// Read returns the next message for the session: what the client sent
// this replica, and answers to this replica's requests that others got.
// An answer to another replica's request is passed to them.
func (c *streamConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	c.startPump()
	for {
		var msg jsonrpc.Message
		relayed := false
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.closed:
			return nil, io.EOF
		case r := <-c.in:
			if r.err != nil {
				return nil, r.err
			}
			msg = r.msg
		case a := <-c.answers:
			msg, relayed = a, true
		}
		resp, ok := msg.(*jsonrpc.Response)
		if !ok {
			return msg, nil
		}
		if id, mine := c.take(resp.ID); mine {
			out := *resp
			out.ID = id
			return &out, nil
		}
		if relayed {
			continue // another replica's
		}
		if ours(resp.ID) && c.passOn(resp) {
			continue
		}
		return msg, nil // an answer to no request: the library drops it
	}
}

// startPump reads the library's connection in a goroutine, so that Read
// can wait for it and for answers at once. It ends with the connection.
func (c *streamConn) startPump() {
	c.pump.Do(func() {
		c.in = make(chan readResult)
		go func() {
			for {
				msg, err := c.Connection.Read(context.Background())
				select {
				case c.in <- readResult{msg, err}:
				case <-c.closed:
					return
				}
				if err != nil {
					return
				}
			}
		}()
	})
}

// passOn publishes an answer to another replica's request; it reports
// whether a replica received it.
func (c *streamConn) passOn(resp *jsonrpc.Response) bool {
	st := c.t.g.sessionStore()
	data, err := jsonrpc.EncodeMessage(resp)
	if st == nil || err != nil {
		return false
	}
	n, err := st.PublishReply(context.Background(), c.t.id, data)
	if err != nil || n == 0 {
		c.t.g.log.Debug("an answer to a request no replica awaits", "err", err)
		return false
	}
	return true
}

// listen subscribes, once, to the answers other replicas receive for this
// session, before the first request leaves (its answer may be quick).
func (c *streamConn) listen(ctx context.Context) {
	st := c.t.g.sessionStore()
	c.mu.Lock()
	if c.replies || st == nil {
		c.mu.Unlock()
		return
	}
	c.replies = true
	c.mu.Unlock()
	msgs, stop, err := st.SubscribeReplies(context.WithoutCancel(ctx), c.t.id)
	if err != nil {
		c.t.g.log.Debug("not listening for answers other replicas receive", "err", err)
		c.mu.Lock()
		c.replies = false // try again with the next request
		c.mu.Unlock()
		return
	}
	c.mu.Lock()
	c.stop = stop
	c.mu.Unlock()
	go func() {
		for {
			select {
			case <-c.closed:
				return
			case data := <-msgs:
				msg, err := jsonrpc.DecodeMessage(data)
				resp, ok := msg.(*jsonrpc.Response)
				if err != nil || !ok {
					continue
				}
				select {
				case c.answers <- resp:
				case <-c.closed:
					return
				}
			}
		}
	}()
}

// Close closes the library's connection and stops listening.
func (c *streamConn) Close() error {
	c.closeOne.Do(func() {
		close(c.closed)
		c.mu.Lock()
		stop := c.stop
		c.mu.Unlock()
		if stop != nil {
			stop()
		}
	})
	return c.Connection.Close()
}
