package messages

import (
	"encoding/json"

	"github.com/toolsearch/toolsearch/internal/jsonobj"
)

// object is a JSON object edited without re-encoding its other members.
type object = jsonobj.Object

func parseObject(raw []byte) (object, error) { return jsonobj.Parse(raw) }

func splitArray(raw []byte) ([]json.RawMessage, bool) { return jsonobj.SplitArray(raw) }

func joinArray(elems []json.RawMessage) json.RawMessage { return jsonobj.JoinArray(elems) }

// textBlock is the JSON of a text content block.
func textBlock(text string) json.RawMessage {
	b, _ := json.Marshal(struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}{"text", text})
	return b
}
