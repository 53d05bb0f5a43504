package anthropic

import (
	"github.com/toolsearch/toolsearch/internal/jsonobj"
)

// object is a JSON object edited without re-encoding its other members.
type object = jsonobj.Object

func parseObject(raw []byte) (object, error) { return jsonobj.Parse(raw) }
