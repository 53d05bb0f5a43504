package proxy

import (
	"bytes"
	"encoding/json"

	"github.com/toolsearch/toolsearch/internal/jsonobj"
)

// object is a JSON object edited without re-encoding its other members.
type object = jsonobj.Object

func parseObject(raw []byte) (object, error) { return jsonobj.Parse(raw) }

func splitArray(raw []byte) ([]json.RawMessage, bool) { return jsonobj.SplitArray(raw) }

func joinArray(elems []json.RawMessage) json.RawMessage { return jsonobj.JoinArray(elems) }

// mustJSON marshals values that cannot fail to marshal (strings, maps and
// slices of them, valid raw messages); on failure it yields null.
// HTML characters are not escaped: the text goes to a model, not a page.
func mustJSON(v any) json.RawMessage {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return json.RawMessage("null")
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// textBlock is the JSON of a text content block.
func textBlock(text string) json.RawMessage {
	return mustJSON(struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}{"text", text})
}
