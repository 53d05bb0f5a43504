package catalog

import (
	"encoding/json"
	"testing"
)

// FuzzObjectKeys checks the key scanner used by Params against a full
// decode: every valid object yields each of its member names once.
func FuzzObjectKeys(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1,"b":{"c":2}}`, `{"x\"y":[1,{"z":3}],"w":"{\"q\":1}"}`, `{ "a" : "b" , "c":[] }`, `{"\u00e9":null,"a":{"a":{"a":1}}}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var m map[string]json.RawMessage
		if json.Unmarshal([]byte(s), &m) != nil || m == nil {
			return
		}
		keys := objectKeys([]byte(s))
		if len(keys) != len(m) {
			t.Fatalf("objectKeys(%q) = %q, want the %d keys of %v", s, keys, len(m), m)
		}
		for _, k := range keys {
			if _, ok := m[k]; !ok {
				t.Fatalf("objectKeys(%q) gave %q, not a member", s, k)
			}
		}
	})
}
