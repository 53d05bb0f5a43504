package hints

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"

	"github.com/toolsearch/toolsearch/core/catalog"
)

// digestPrefix starts every digest: the hash it was made with.
const digestPrefix = "sha256:"

// Digest identifies what hints are written from: a tool's name,
// description and input schema. It is the SHA-256 of the canonical JSON
// of {"description", "input_schema", "name"}, where canonical means every
// object's members sorted by name, no white space between tokens, and
// strings and numbers written as encoding/json writes them; so a server
// that reorders the keys of a schema or indents it differently keeps its
// digest, and one that changes a word does not. A schema that is not JSON
// is hashed as its bytes.
func Digest(t *catalog.Tool) string {
	var b bytes.Buffer
	b.WriteString(`{"description":`)
	writeCanonical(&b, mustString(t.Description))
	b.WriteString(`,"input_schema":`)
	if s := bytes.TrimSpace(t.InputSchema); len(s) == 0 {
		b.WriteString("null")
	} else {
		writeCanonical(&b, s)
	}
	b.WriteString(`,"name":`)
	writeCanonical(&b, mustString(t.Name))
	b.WriteByte('}')
	sum := sha256.Sum256(b.Bytes())
	return digestPrefix + hex.EncodeToString(sum[:])
}

// writeCanonical writes raw JSON in canonical form; text that is not JSON
// is written as a JSON string holding it, so that it cannot be confused
// with a JSON value.
func writeCanonical(b *bytes.Buffer, raw []byte) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		b.WriteString(`{"invalid json":`)
		writeCanonical(b, mustString(string(raw)))
		b.WriteByte('}')
		return
	}
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)       // maps are written with sorted keys
	b.Truncate(b.Len() - 1) // Encode's newline
}

func mustString(s string) []byte {
	out, _ := json.Marshal(s)
	return out
}

// validDigest reports whether d has the form Digest writes.
func validDigest(d string) bool {
	h, ok := strings.CutPrefix(d, digestPrefix)
	if !ok || len(h) != 2*sha256.Size {
		return false
	}
	_, err := hex.DecodeString(h)
	return err == nil
}
