package cluster

import "testing"

// FuzzUnseal: bytes not sealed for the session id and label never open,
// and never panic; what seal makes opens to what was sealed.
func FuzzUnseal(f *testing.F) {
	f.Add("S1", "p:session:x", []byte("state"), []byte{})
	f.Add("", "", []byte{}, []byte("0123456789abcdef0123456789abcdef"))
	f.Add("S2", "p:stream:y", []byte(`{"method":"m"}`), seal("S3", "p:stream:y", []byte("other")))
	f.Fuzz(func(t *testing.T, id, label string, data, forged []byte) {
		got, err := unseal(id, label, seal(id, label, data))
		if err != nil || string(got) != string(data) {
			t.Fatalf("a sealed value does not open: %v", err)
		}
		if _, err := unseal(id+"x", label, seal(id, label, data)); err == nil {
			t.Fatal("a value opened for another id")
		}
		if out, err := unseal(id, label, forged); err == nil {
			// Only a genuine seal opens: forged must have been made by seal.
			if again := seal(id, label, out); len(again) != len(forged) {
				t.Fatalf("bytes of another shape opened: %q", forged)
			}
		}
	})
}
