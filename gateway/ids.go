package gateway

// JSON-RPC ids the gateway's clients may use. The MCP library reads a
// numeric id as a float64 and answers with its integer part: id 1.5 comes
// back as 1, 9007199254740993 as 9007199254740992 and 1e20 as
// -9223372036854775808, each an id another request of the client may
// have. The gateway refuses such messages before the library sees them,
// with an error of no id: strings and integers of at most 2^53 in
// magnitude (in any notation: 1e3 and 2.0 are 1000 and 2) pass.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"strconv"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/toolsearch/toolsearch/gateway/wire"
)

// maxExactID is the largest magnitude of an integer id a float64 holds
// exactly.
var maxExactID = new(big.Int).Lsh(big.NewInt(1), 53)

// idProblem says what is wrong with a raw JSON-RPC id, or "" when the
// library answers it with the same id: none, null, a string, or an integer
// of at most 2^53 in magnitude.
func idProblem(raw []byte) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" || raw[0] == '"' {
		return ""
	}
	if len(raw) > 40 || !json.Valid(raw) || raw[0] == '+' {
		return fmt.Sprintf("the id %.40s is not a string or a number of at most 40 characters", raw)
	}
	// The exponent is bounded before the exact value is worked out.
	if i := bytes.IndexAny(raw, "eE"); i >= 0 {
		if e, err := strconv.Atoi(string(raw[i+1:])); err != nil || e > 400 || e < -400 {
			return fmt.Sprintf("the id %.40s is not an integer of at most 2^53 in magnitude, so it cannot be answered with the same id", raw)
		}
	}
	r, ok := new(big.Rat).SetString(string(raw))
	if !ok {
		return fmt.Sprintf("the id %.40s is not a string or a number", raw)
	}
	if !r.IsInt() || new(big.Int).Abs(r.Num()).Cmp(maxExactID) > 0 {
		return fmt.Sprintf("the id %.40s is not an integer of at most 2^53 in magnitude, so it cannot be answered with the same id", raw)
	}
	return ""
}

// messageIDProblem checks the ids of a JSON-RPC message or batch; it
// leaves what is not JSON to the library.
func messageIDProblem(data []byte) string {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		var batch []json.RawMessage
		if json.Unmarshal(trimmed, &batch) != nil {
			return ""
		}
		for _, m := range batch {
			if p := messageIDProblem(m); p != "" {
				return p
			}
		}
		return ""
	}
	var h wire.MsgHead
	_, _ = h.Write(trimmed)
	id, long, ok := h.ID()
	if !ok {
		return ""
	}
	if long && id[0] == '"' {
		return "" // a long string
	}
	return idProblem(id)
}

// idError is the error response for a message with an id the gateway
// refuses.
func idError(problem string) []byte {
	return errorResponse(nil, jsonrpc.CodeInvalidRequest, problem)
}

// errorResponse is a JSON-RPC error response answering id (nil: none).
func errorResponse(id any, code int64, msg string) []byte {
	b, _ := json.Marshal(struct {
		JSONRPC string        `json:"jsonrpc"`
		ID      any           `json:"id"`
		Error   jsonrpc.Error `json:"error"`
	}{"2.0", id, jsonrpc.Error{Code: code, Message: msg}})
	return b
}

// checkIDs refuses, with 400 and a JSON-RPC error, a POST whose message
// has an id the library would answer with another.
func checkIDs(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Body == nil {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(r.Body) // the guard has read and bounded it
		if err != nil {
			http.Error(w, "reading the request body failed", http.StatusBadRequest)
			return
		}
		if p := messageIDProblem(body); p != "" {
			writeJSONRPCError(w, http.StatusBadRequest, jsonrpc.CodeInvalidRequest, p)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		next.ServeHTTP(w, r)
	})
}

// idCheckedStdio is a client connection over a reader and a writer (stdin
// and stdout) with the messages whose ids the library would answer with
// another answered by an error and not passed on. Lines longer than the
// library's bound pass unchecked: the library refuses them.
type idCheckedStdio struct {
	mu sync.Mutex // one message at a time on w
	w  io.Writer
}

// Write writes one message of the library.
func (s *idCheckedStdio) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// filter copies r to pw line by line, answering the refused ones on w.
func (s *idCheckedStdio) filter(r io.Reader, pw *io.PipeWriter) {
	br := bufio.NewReaderSize(r, 64<<10)
	var line []byte
	long := false
	for {
		frag, err := br.ReadSlice('\n')
		switch {
		case long:
			_, _ = pw.Write(frag)
		case len(line)+len(frag) > wire.MaxMessageBytes:
			long = true
			_, _ = pw.Write(line)
			_, _ = pw.Write(frag)
			line = nil
		default:
			line = append(line, frag...)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if !long && len(line) > 0 {
			if p := messageIDProblem(line); p != "" {
				_, _ = s.Write(append(idError(p), '\n'))
			} else if _, werr := pw.Write(line); werr != nil {
				return
			}
		}
		if err != nil {
			pw.CloseWithError(err)
			return
		}
		line, long = line[:0], false
	}
}

// writeJSONRPCError answers with status and a JSON-RPC error of no id.
func writeJSONRPCError(w http.ResponseWriter, status int, code int64, msg string) {
	writeJSONRPCErrorID(w, status, nil, code, msg)
}

// writeJSONRPCErrorID is writeJSONRPCError answering the request with id
// (a JSON string or number; anything else is answered with a null id).
func writeJSONRPCErrorID(w http.ResponseWriter, status int, id json.RawMessage, code int64, msg string) {
	var rid any
	if len(id) > 0 && (id[0] == '"' || id[0] == '-' || (id[0] >= '0' && id[0] <= '9')) {
		rid = id
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(errorResponse(rid, code, msg), '\n'))
}
