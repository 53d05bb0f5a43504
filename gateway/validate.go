package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/toolsearch/toolsearch/core/catalog"
)

// validators keeps the resolved input schema of each tool that was called,
// so that a schema is compiled once, not at every call. It lives in a view
// and goes with it when the catalog changes.
type validators struct {
	m sync.Map // *catalog.Tool → *jsonschema.Resolved (nil: not enforced)
}

// validate checks args against the tool's input schema. A schema the
// validator cannot read is not enforced (log says so); the upstream server
// still checks.
func (vs *validators) validate(t *catalog.Tool, args json.RawMessage, log *slog.Logger) error {
	var rs *jsonschema.Resolved
	if v, ok := vs.m.Load(t); ok {
		rs, _ = v.(*jsonschema.Resolved)
	} else {
		var sch jsonschema.Schema
		if len(t.InputSchema) > 0 && json.Unmarshal(t.InputSchema, &sch) == nil {
			sch.Schema = "" // the draft named does not change these checks
			r, err := sch.Resolve(nil)
			if err == nil {
				rs = r
			} else {
				log.Debug("input schema not enforced", "tool", t.ID(), "err", err)
			}
		}
		vs.m.Store(t, rs)
	}
	if rs == nil {
		// Nothing to enforce beyond the shape: no need to decode.
		if b := bytes.TrimSpace(args); len(b) == 0 || b[0] != '{' || !json.Valid(b) {
			return errors.New("the arguments must be a JSON object")
		}
		return nil
	}
	var inst any
	if err := json.Unmarshal(args, &inst); err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	if _, ok := inst.(map[string]any); !ok {
		return errors.New("the arguments must be a JSON object")
	}
	return rs.Validate(inst)
}
