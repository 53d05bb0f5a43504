package upstream

import (
	"encoding/json"

	"github.com/toolsearch/toolsearch/internal/utf8cut"
)

// Bounds on what one upstream server's tools/list may make the gateway
// hold. Every definition is kept several times over (as sent, decoded, in
// the search index, in the lists served), so these bound the gateway's
// memory in proportion to what a server sends. The real servers measured
// stay far below them: their longest description is about 34 KB, their
// largest definition about 80 KB and their largest list about 1 MB of
// 401 tools.
const (
	// MaxServerTools is the most tools taken from one server.
	MaxServerTools = 10_000
	// maxServerListBytes is the most bytes of tool definitions taken from
	// one server.
	maxServerListBytes = 8 << 20
	// MaxDescriptionBytes is the longest description kept whole; a longer
	// one is cut at a character boundary and marked as cut.
	MaxDescriptionBytes = 64 << 10
	// maxToolBytes is the largest definition kept, once its description
	// is cut; a larger one (its schema, say) is left out.
	maxToolBytes = 1 << 20
)

// DescriptionCut ends a description cut at MaxDescriptionBytes.
const DescriptionCut = " [cut by toolsearch: the description was longer than 64 KiB]"

// boundDefinitions returns raws with every description longer than
// MaxDescriptionBytes cut, and without any definition still larger than
// maxToolBytes; warn says what was done to which tool. raws itself is
// returned when nothing needs doing.
func boundDefinitions(raws []json.RawMessage, warn func(msg string, args ...any)) []json.RawMessage {
	out := raws
	copied := false
	drop := func(i int) {
		if !copied {
			out = append([]json.RawMessage(nil), raws[:i]...)
			copied = true
		}
	}
	for i, raw := range raws {
		if len(raw) <= MaxDescriptionBytes {
			if copied {
				out = append(out, raw)
			}
			continue
		}
		cut, name, err := cutDescription(raw)
		switch {
		case err != nil:
			// Not an object the catalog could take either: it says why.
		case len(cut) > maxToolBytes:
			drop(i)
			warn("leaving out a tool whose definition is over 1 MiB", "tool", quoteShort(name), "bytes", len(cut))
			continue
		case len(cut) != len(raw):
			drop(i)
			warn("cutting a tool's description to 64 KiB", "tool", quoteShort(name), "bytes", len(raw))
			out = append(out, cut)
			continue
		}
		if copied {
			out = append(out, raw)
		}
	}
	return out
}

// keptSize is how many bytes of raw boundDefinitions keeps.
func keptSize(raw json.RawMessage) int {
	if len(raw) <= MaxDescriptionBytes {
		return len(raw)
	}
	cut, _, err := cutDescription(raw)
	if err != nil || len(cut) > maxToolBytes {
		return 0
	}
	return len(cut)
}

// cutDescription returns raw with its description cut to
// MaxDescriptionBytes, and the tool's name; raw itself when the
// description is short enough.
func cutDescription(raw json.RawMessage) (json.RawMessage, string, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, "", err
	}
	var name, desc string
	_ = json.Unmarshal(obj["name"], &name)
	if err := json.Unmarshal(obj["description"], &desc); err != nil || len(desc) <= MaxDescriptionBytes {
		return raw, name, nil
	}
	b, err := json.Marshal(utf8cut.Prefix(desc, MaxDescriptionBytes) + DescriptionCut)
	if err != nil {
		return nil, name, err
	}
	obj["description"] = b
	cut, err := json.Marshal(obj)
	return cut, name, err
}
