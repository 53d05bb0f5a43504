package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/toolsearch/toolsearch/adapters/messages"
	"github.com/toolsearch/toolsearch/core/discovery"
	"github.com/toolsearch/toolsearch/proxy/internal/sse"
)

// serverPlan is a request with a server search tool, as the upstream gets
// it: the search tool replaced by an ordinary one, deferred tools left out
// until found, the history's search blocks written as text.
type serverPlan struct {
	eng      *engine
	name     string
	regex    bool
	top      object
	tools    []json.RawMessage
	sent     map[string]bool
	messages []json.RawMessage
	st       rewriteStats
}

// planServer prepares the emulation of a request's server search tool.
func (p *Proxy) planServer(ctx context.Context, req *request, fold bool) (*serverPlan, error) {
	info := req.info[req.search]
	plan := &serverPlan{name: info.Name, regex: strings.Contains(info.Type, "regex")}
	if plan.name == "" {
		plan.name = "tool_search_tool_bm25"
		if plan.regex {
			plan.name = "tool_search_tool_regex"
		}
	}
	n, size := deferredSize(req.tools, req.info)
	if err := checkDeferredSize(n, size); err != nil {
		return nil, err
	}
	eng, hit, err := p.engines.lookup(ctx, req.top.Get("tools"), size, func() (*engine, error) { return buildEngine(req.tools, req.info) })
	if err != nil {
		return nil, err
	}
	p.log.Debug("proxy: search index", "deferred", eng.count, "cached", hit)
	plan.eng = eng
	loaded := loadedSet(req.messages)
	plan.tools, plan.sent = req.emulatedTools(loaded.Has, eng.searchToolDef(plan.name, plan.regex), &plan.st)
	plan.messages = emulatedMessages(req.messages, plan.sent, fold, &plan.st)
	plan.top = req.top.Clone()
	plan.top.Del("stream")
	return plan, nil
}

// notCallable is the error the model gets for a tool_use of a tool the
// upstream was not given: a deferred tool no search of the turn or the
// history loaded (it stays unloaded: only a search loads it), or a name no
// tool has. Names are exact; one that differs only in case gets the exact
// name suggested, but is not called.
func (plan *serverPlan) notCallable(name string) string {
	shown := clipText(name, 128)
	how := fmt.Sprintf("search for it with %s first", plan.name)
	if _, deferred := plan.eng.defs[name]; deferred {
		if !plan.regex {
			how = fmt.Sprintf("load it with %s first (query \"select:%s\")", plan.name, name)
		}
		return fmt.Sprintf("Tool %q is deferred and has not been loaded: %s, then call it.", shown, how)
	}
	for n := range plan.sent {
		if n != "" && strings.EqualFold(n, name) {
			return fmt.Sprintf("There is no tool named %q (tool names are exact). Did you mean %q?", shown, n)
		}
	}
	for n := range plan.eng.defs {
		if strings.EqualFold(n, name) {
			return fmt.Sprintf("There is no tool named %q (tool names are exact). Did you mean the deferred tool %q? %s.", shown, n, strings.ToUpper(how[:1])+how[1:])
		}
	}
	return fmt.Sprintf("There is no tool named %q. Use only the tools you were given, or %s to find one.", shown, plan.name)
}

// serverSideCountBody is a count_tokens body with the server search tool
// emulated.
func (p *Proxy) serverSideCountBody(ctx context.Context, req *request, fold bool) ([]byte, error) {
	plan, err := p.planServer(ctx, req, fold)
	if err != nil {
		return nil, err
	}
	top := plan.top.Clone()
	top.Set("tools", joinArray(plan.tools))
	top.Set("messages", joinArray(plan.messages))
	return top.Marshal(), nil
}

// upstreamMessage is the part of a Message the search loop reads.
type upstreamMessage struct {
	Type         string            `json:"type"`
	Content      []json.RawMessage `json:"content"`
	StopReason   json.RawMessage   `json:"stop_reason"`
	StopSequence json.RawMessage   `json:"stop_sequence"`
	Usage        json.RawMessage   `json:"usage"`
}

// usageSum adds the token counts of the upstream calls of one turn.
type usageSum struct {
	last   map[string]json.RawMessage
	counts map[string]int64
}

var summedUsage = []string{"input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"}

func (u *usageSum) add(raw json.RawMessage) {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil || m == nil {
		return
	}
	if u.counts == nil {
		u.counts = map[string]int64{}
	}
	u.last = m
	for _, k := range summedUsage {
		var n int64
		if json.Unmarshal(m[k], &n) == nil {
			u.counts[k] += n
		}
	}
}

func (u *usageSum) json() json.RawMessage {
	if u.last == nil {
		return json.RawMessage(`{"input_tokens":0,"output_tokens":0}`)
	}
	out := make(map[string]json.RawMessage, len(u.last))
	for k, v := range u.last {
		out[k] = v
	}
	for k, n := range u.counts {
		if _, ok := out[k]; ok {
			out[k] = mustJSON(n)
		}
	}
	return mustJSON(out)
}

// searchCall is one call of the emulated search tool, answered.
type searchCall struct {
	id      string
	found   []string
	text    string
	isError bool
}

// answerCalls replaces each call of the search tool in an upstream turn by
// the server_tool_use and tool_search_tool_result blocks the API returns.
// It returns the client's blocks, the calls answered and the number of
// other tool_use blocks.
func (p *Proxy) answerCalls(ctx context.Context, plan *serverPlan, content []json.RawMessage) ([]json.RawMessage, []searchCall, int, error) {
	out := make([]json.RawMessage, 0, len(content)+2)
	var calls []searchCall
	others := 0
	for _, b := range content {
		var blk struct {
			Type  string          `json:"type"`
			ID    string          `json:"id"`
			Name  string          `json:"name"`
			Input json.RawMessage `json:"input"`
		}
		if json.Unmarshal(b, &blk) != nil || blk.Type != "tool_use" {
			out = append(out, b)
			continue
		}
		if blk.Name != plan.name {
			if blk.Name != "" && plan.sent[blk.Name] {
				others++
				out = append(out, b)
				continue
			}
			// A tool the model was not given (deferred and not found by a
			// search, or no tool at all): the API would not let the model
			// call it, so the client does not get the call to run. The
			// model gets an error and may search.
			text := plan.notCallable(blk.Name)
			calls = append(calls, searchCall{id: blk.ID, text: text, isError: true})
			p.log.Info("proxy: the model called a tool it was not given; answered with an error", "tool", clipText(blk.Name, 128))
			continue
		}
		var in struct {
			Query      string `json:"query"`
			Pattern    string `json:"pattern"`
			MaxResults int    `json:"max_results"`
		}
		_ = json.Unmarshal(blk.Input, &in)
		q := in.Query
		if plan.regex && in.Pattern != "" || q == "" {
			q = in.Pattern
		}
		max := p.cfg.MaxResults
		if in.MaxResults > 0 && in.MaxResults < max {
			max = in.MaxResults
		}
		res, err := plan.eng.Search(ctx, q, plan.regex, max)
		if err != nil {
			return nil, nil, 0, err
		}
		srvID := "srvtoolu_" + strings.TrimPrefix(blk.ID, "toolu_")
		input := blk.Input
		if len(input) == 0 {
			input = json.RawMessage(`{}`)
		}
		out = append(out, mustJSON(map[string]any{"type": "server_tool_use", "id": srvID, "name": plan.name, "input": input}))
		call := searchCall{id: blk.ID, found: res.Names}
		var result any
		switch {
		case res.ErrorCode != "":
			result = map[string]any{"type": "tool_search_tool_result_error", "error_code": res.ErrorCode, "error_message": res.Message}
			call.text, call.isError = "Tool search failed ("+res.ErrorCode+"): "+res.Message, true
		default:
			refs := make([]any, 0, len(res.Names))
			for _, n := range res.Names {
				refs = append(refs, map[string]any{"type": "tool_reference", "tool_name": n})
			}
			result = map[string]any{"type": "tool_search_tool_search_result", "tool_references": refs}
			call.text = discovery.LoadedText(res.Names)
			if call.text == "" {
				call.text = res.Message
			}
		}
		out = append(out, mustJSON(map[string]any{"type": "tool_search_tool_result", "tool_use_id": srvID, "content": result}))
		calls = append(calls, call)
		p.log.Debug("proxy: emulated server-side search", "found", len(res.Names), "error", res.ErrorCode)
	}
	return out, calls, others, nil
}

// serveServerSearch answers a request with a server search tool for an
// upstream without one: it calls the upstream, answers the model's calls of
// the search tool with the engine, calls again with the tools found, and
// sends the client every turn's blocks as one message. When the client
// asked for a stream, each round is streamed from the upstream and relayed
// as it arrives (text deltas included), up to the model's first call of the
// search tool; the server_tool_use and tool_search_tool_result blocks that
// answer it follow as soon as the search has run.
func (p *Proxy) serveServerSearch(w http.ResponseWriter, r *http.Request, req *request, fold bool, drop []string) {
	p.serverSearch(w, r, req, fold, drop, nil)
}

// serverSearch is serveServerSearch; pending is set on a retry with
// system messages folded after a refusal, remembered for the model once
// the upstream takes the retry's first round.
func (p *Proxy) serverSearch(w http.ResponseWriter, r *http.Request, req *request, fold bool, drop []string, pending *pendingLevel) {
	ctx := r.Context()
	plan, err := p.planServer(ctx, req, fold)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}
	var ms *sse.MessageWriter
	fail := func(status int, body []byte) {
		if ms != nil {
			_ = ms.Error(body)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write(body)
	}
	var (
		meta       json.RawMessage
		content    []json.RawMessage
		usage      usageSum
		stopReason json.RawMessage
		stopSeq    json.RawMessage
		msgs       = plan.messages
		tools      = plan.tools
		held       int64 // bytes of the model's blocks over the turn's rounds
	)
	for round := 0; ; round++ {
		top := plan.top.Clone()
		top.Set("tools", joinArray(tools))
		top.Set("messages", joinArray(msgs))
		var (
			status   int
			body     []byte
			m        upstreamMessage
			streamed int // blocks of m already streamed to the client
			err      error
		)
		sent := top.Marshal()
		if req.stream {
			// Stream the round: the model's blocks reach the client as the
			// upstream sends them, up to its first call of the search tool.
			start := func(msg json.RawMessage) error {
				if ms != nil {
					return nil
				}
				meta = msg
				sse.SetHeaders(w.Header())
				w.WriteHeader(http.StatusOK)
				ms = sse.NewMessageWriter(sse.NewWriter(w))
				return ms.Start(msg)
			}
			status, body, m, streamed, err = p.streamRound(ctx, r, sent, drop, plan, start, &ms)
		} else {
			status, body, err = p.callUpstream(ctx, r, sent, drop, ms)
		}
		if err != nil {
			if ctx.Err() != nil {
				return // the client went away
			}
			if errors.Is(err, errAnswerTooLarge) {
				p.log.Warn("proxy: upstream answer too large", "path", r.URL.Path, "round", round, "bound", p.cfg.MaxRoundBytes)
				fail(http.StatusBadGateway, errorBody("api_error", err.Error()))
				return
			}
			p.log.Warn("proxy: upstream call failed", "path", r.URL.Path, "round", round, "err", err)
			fail(http.StatusBadGateway, errorBody("api_error", "the proxy could not reach the upstream: "+errText(err)))
			return
		}
		if refusalStatus(status) && round == 0 && !fold && ms == nil {
			// A first refusal of system messages or of what they carry:
			// fold them and start over. Without tool search upstream an
			// inline definition refused cannot be named by reference
			// instead (that needs defer_loading), so it too is folded:
			// the added tools go into tools. A refusal that names nothing
			// the request used is folded too when there is something to
			// fold. Either is remembered only once the upstream takes the
			// folded request.
			rf := readRefusal(body, sent, r.Header)
			retry := &pendingLevel{what: rf.Named(), message: rf.Message}
			switch {
			case rf.drop() == dropFold || rf.drop() == dropInline:
				if _, lower := p.levels.next(req.model, level{emulate: true}, dropFold); lower {
					p.log.Info("proxy: the upstream refused a feature; retrying at a lower level", "model", req.model, "refused", rf.Named())
					req.applyToolChanges()
					p.serverSearch(w, r, req, true, append(append([]string(nil), drop...), foldBetas...), retry)
					return
				}
			case !rf.Names && (rf.Changes(messages.Classic) || rf.Changes(messages.ReferenceAdd)):
				p.log.Info("proxy: the upstream refused the request naming nothing it used; retrying with system messages folded", "model", req.model, "message", rf.Message)
				retry.what = "a request naming nothing"
				req.applyToolChanges()
				p.serverSearch(w, r, req, true, append(append([]string(nil), drop...), foldBetas...), retry)
				return
			}
		}
		if status != http.StatusOK {
			p.log.Warn("proxy: upstream refused an emulated search round", "status", status, "round", round)
			fail(status, apiErrorFrom(status, body))
			return
		}
		if round == 0 && pending != nil {
			folded := level{emulate: true, fold: true}
			if p.levels.take(req.model, folded, "the upstream refused "+pending.what+": "+pending.message) {
				p.log.Info("proxy: the upstream took the request at a lower level; remembered", "model", req.model, "level", folded.String())
			}
		}
		if !req.stream {
			if err := json.Unmarshal(body, &m); err != nil || m.Type != "message" {
				fail(http.StatusBadGateway, errorBody("api_error", "the upstream answered with a body that is not a message"))
				return
			}
			if round == 0 {
				meta = body
			}
		}
		for _, b := range m.Content {
			held += int64(len(b))
		}
		if held > p.cfg.MaxRoundBytes {
			// Each round is bounded, and so is the turn: its blocks go
			// back upstream in the next round.
			p.log.Warn("proxy: upstream answers too large", "path", r.URL.Path, "round", round, "bound", p.cfg.MaxRoundBytes)
			fail(http.StatusBadGateway, errorBody("api_error", p.tooLarge().Error()))
			return
		}
		content = append(content, m.Content[:streamed]...)
		usage.add(m.Usage)
		blocks, calls, others, err := p.answerCalls(ctx, plan, m.Content[streamed:])
		others += countToolUses(m.Content[:streamed])
		if err != nil {
			fail(http.StatusInternalServerError, errorBody("api_error", "tool search failed: "+err.Error()))
			return
		}
		for _, b := range blocks {
			content = append(content, b)
			if ms != nil {
				if err := ms.Block(b); err != nil {
					return // the client went away
				}
			}
		}
		stopReason, stopSeq = m.StopReason, m.StopSequence
		if len(calls) == 0 || others > 0 {
			break
		}
		if round+1 >= p.cfg.MaxSearchRounds {
			stopReason = json.RawMessage(`"pause_turn"`)
			break
		}
		// Continue upstream: the model's turn, the search answers, and the
		// tools found.
		results := make([]json.RawMessage, 0, len(calls))
		for _, c := range calls {
			tr := map[string]any{"type": "tool_result", "tool_use_id": c.id, "content": []json.RawMessage{textBlock(c.text)}}
			if c.isError {
				tr["is_error"] = true
			}
			results = append(results, mustJSON(tr))
			for _, n := range c.found {
				if !plan.sent[n] {
					if def, ok := plan.eng.defs[n]; ok {
						tools = append(tools, def)
						plan.sent[n] = true
					}
				}
			}
		}
		msgs = append(msgs[:len(msgs):len(msgs)],
			newMessage("assistant", m.Content), newMessage("user", results))
	}
	if ms != nil {
		_ = ms.End(stopReason, stopSeq, usage.json())
		return
	}
	out, err := parseObject(meta)
	if err != nil {
		writeError(w, http.StatusBadGateway, "api_error", "the upstream answered with a body that is not a message")
		return
	}
	if content == nil {
		content = []json.RawMessage{}
	}
	out.Set("content", joinArray(content))
	out.Set("stop_reason", stopReason)
	out.Set("stop_sequence", orNull(stopSeq))
	out.Set("usage", usage.json())
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out.Marshal())
}

func orNull(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage("null")
	}
	return raw
}

// hopHeaders are not forwarded.
var hopHeaders = map[string]bool{
	"Connection": true, "Keep-Alive": true, "Proxy-Authenticate": true, "Proxy-Authorization": true,
	"Proxy-Connection": true, "Te": true, "Trailer": true, "Transfer-Encoding": true, "Upgrade": true,
	"Content-Length": true, "Accept-Encoding": true, "Host": true,
}

// errAnswerTooLarge is a round's answer past Config.MaxRoundBytes (the
// error says the bound). The client gets it as an api_error (an error
// event once its stream has begun) and the upstream call is closed.
var errAnswerTooLarge = errors.New("the upstream's answer is larger than the proxy holds of one round of emulated tool search")

// tooLarge is errAnswerTooLarge with the bound.
func (p *Proxy) tooLarge() error {
	return fmt.Errorf("%w (%d bytes)", errAnswerTooLarge, p.cfg.MaxRoundBytes)
}

// readUpstream reads an upstream answer whole (a round of emulated search,
// or an error body), within Config.MaxRoundBytes.
func (p *Proxy) readUpstream(r io.Reader) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, p.cfg.MaxRoundBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading the upstream answer: %w", err)
	}
	if int64(len(b)) > p.cfg.MaxRoundBytes {
		return nil, p.tooLarge()
	}
	return b, nil
}

// pingEvery is how often a client stream gets a ping while the proxy waits
// for the upstream.
var pingEvery = 5 * time.Second

// callUpstream makes one non-streaming call of the Messages API with the
// client's headers. While it waits, a started client stream gets pings.
func (p *Proxy) callUpstream(ctx context.Context, in *http.Request, body []byte, drop []string, ms *sse.MessageWriter) (int, []byte, error) {
	type result struct {
		status int
		body   []byte
		err    error
	}
	ch := make(chan result, 1)
	go func() {
		resp, err := p.upstreamRequest(ctx, in, body, drop, "application/json")
		if err != nil {
			ch <- result{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := p.readUpstream(resp.Body)
		if err != nil {
			ch <- result{err: err}
			return
		}
		ch <- result{status: resp.StatusCode, body: b}
	}()
	var tick <-chan time.Time
	if ms != nil {
		t := time.NewTicker(pingEvery)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case res := <-ch:
			return res.status, res.body, res.err
		case <-tick:
			_ = ms.Ping()
		}
	}
}

// upstreamRequest sends one POST of the Messages API upstream with the
// client's headers (the credential and beta rules applied) and returns the
// response.
func (p *Proxy) upstreamRequest(ctx context.Context, in *http.Request, body []byte, drop []string, accept string) (*http.Response, error) {
	u := *p.upstream
	u.Path = strings.TrimSuffix(p.upstream.Path, "/") + in.URL.Path
	u.RawPath = ""
	u.RawQuery = in.URL.RawQuery
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("building the upstream request: %w", err)
	}
	for k, vs := range in.Header {
		if hopHeaders[http.CanonicalHeaderKey(k)] {
			continue
		}
		req.Header[k] = append([]string(nil), vs...)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", accept)
	p.applyHeaders(req.Header, drop)
	return p.client.Do(req)
}

// countToolUses counts the tool_use blocks of content.
func countToolUses(content []json.RawMessage) int {
	n := 0
	for _, b := range content {
		var v struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(b, &v) == nil && v.Type == "tool_use" {
			n++
		}
	}
	return n
}

// streamRound makes one streaming call of the upstream and relays the
// round's blocks to the client as they arrive, up to the first tool_use of
// the emulated search tool, which it holds back with everything after it
// (answerCalls replaces it). start is called with message_start's message
// before the first block is relayed (it starts the client's stream on the
// first round). It returns the status and, when not 200, the body; else the
// round's message rebuilt from the stream and how many of its blocks were
// relayed.
func (p *Proxy) streamRound(ctx context.Context, in *http.Request, body []byte, drop []string, plan *serverPlan,
	start func(json.RawMessage) error, ms **sse.MessageWriter) (int, []byte, upstreamMessage, int, error) {
	top, err := parseObject(body)
	if err != nil {
		return 0, nil, upstreamMessage{}, 0, fmt.Errorf("building the upstream request: %w", err)
	}
	top.Set("stream", json.RawMessage("true"))
	resp, err := p.upstreamRequest(ctx, in, top.Marshal(), drop, "text/event-stream")
	if err != nil {
		return 0, nil, upstreamMessage{}, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, err := p.readUpstream(resp.Body)
		return resp.StatusCode, b, upstreamMessage{}, 0, err
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "application/json" {
		// An upstream that answers a stream request with a whole message.
		b, err := p.readUpstream(resp.Body)
		if err != nil {
			return 0, nil, upstreamMessage{}, 0, err
		}
		var m upstreamMessage
		if err := json.Unmarshal(b, &m); err != nil || m.Type != "message" {
			return http.StatusBadGateway, errorBody("api_error", "the upstream answered with a body that is not a message"), upstreamMessage{}, 0, nil
		}
		if err := start(b); err != nil {
			return 0, nil, upstreamMessage{}, 0, err
		}
		return http.StatusOK, nil, m, 0, nil
	}
	acc := sse.Accumulator{Limit: p.cfg.MaxRoundBytes}
	rd := sse.NewReader(resp.Body)
	index := map[int]int{} // upstream index → client index, for relayed blocks
	holding := false       // from the first search call on, blocks wait
	relayed := 0
	afterStart := false // the ping after message_start: the client had one
	for !acc.Done {
		ev, err := rd.Next()
		if err != nil {
			return 0, nil, upstreamMessage{}, 0, fmt.Errorf("reading the upstream stream: %w", err)
		}
		if ev.Name == "ping" || len(ev.Data) == 0 {
			if *ms != nil && !afterStart {
				_ = (*ms).Ping()
			}
			afterStart = false
			continue
		}
		afterStart = false
		if err := acc.Add(ev); err != nil {
			switch {
			case errors.Is(err, sse.ErrTooLarge):
				return 0, nil, upstreamMessage{}, 0, p.tooLarge()
			case ev.Name == "error":
				return http.StatusBadGateway, ev.Data, upstreamMessage{}, 0, nil
			}
			return 0, nil, upstreamMessage{}, 0, err
		}
		var e struct {
			Type         string          `json:"type"`
			Index        int             `json:"index"`
			ContentBlock json.RawMessage `json:"content_block"`
			Delta        json.RawMessage `json:"delta"`
		}
		_ = json.Unmarshal(ev.Data, &e)
		switch e.Type {
		case "message_start":
			if err := start(acc.Message); err != nil {
				return 0, nil, upstreamMessage{}, 0, err
			}
			afterStart = true
		case "content_block_start":
			var b struct {
				Type string `json:"type"`
				Name string `json:"name"`
			}
			_ = json.Unmarshal(e.ContentBlock, &b)
			if b.Type == "tool_use" && (b.Name == plan.name || b.Name == "" || !plan.sent[b.Name]) {
				holding = true
			}
			if holding || *ms == nil {
				continue
			}
			i, err := (*ms).StartBlock(e.ContentBlock)
			if err != nil {
				return 0, nil, upstreamMessage{}, 0, err
			}
			index[e.Index] = i
			relayed++
		case "content_block_delta":
			if i, ok := index[e.Index]; ok {
				if err := (*ms).Delta(i, e.Delta); err != nil {
					return 0, nil, upstreamMessage{}, 0, err
				}
			}
		case "content_block_stop":
			if i, ok := index[e.Index]; ok {
				if err := (*ms).StopBlock(i); err != nil {
					return 0, nil, upstreamMessage{}, 0, err
				}
			}
		}
	}
	return http.StatusOK, nil, upstreamMessage{Type: "message", Content: acc.Blocks(), StopReason: acc.StopReason,
		StopSequence: acc.StopSequence, Usage: acc.Usage}, relayed, nil
}
