package skills

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// entryJSON writes an entry whose manifest lists files (uri → content)
// with their true digests and sizes.
func entryJSON(uri, frontmatter string, files map[string]string) string {
	var res []File
	for u, c := range files {
		res = append(res, File{URI: u, Digest: Digest([]byte(c)), Size: int64(len(c))})
	}
	b, _ := json.Marshal(res)
	return fmt.Sprintf(`{"uri":%q,"frontmatter":%s,"resources":%s}`, uri, frontmatter, b)
}

func TestParse(t *testing.T) {
	t.Parallel()
	fm := `{"name":"pdf-forms","description":"Fill PDF forms","license":"MIT","metadata":{"v":"1"}}`
	good := entryJSON("skill://pdf-forms/SKILL.md", fm, map[string]string{"skill://pdf-forms/SKILL.md": "x", "skill://pdf-forms/ref/a.md": "y"})
	digest := Digest([]byte("x"))
	tests := []struct {
		name, raw string
		want      string // substring of the error; "" for none
	}{
		{"good", good, ""},
		{"nested path", entryJSON("skill://acme/billing/refunds/SKILL.md", `{"name":"refunds","description":"d"}`,
			map[string]string{"skill://acme/billing/refunds/SKILL.md": "a"}), ""},
		{"other scheme", entryJSON("github://o/r/refunds/SKILL.md", `{"name":"refunds","description":"d"}`,
			map[string]string{"github://o/r/refunds/SKILL.md": "a"}), ""},
		{"dynamic", `{"uri":"skill://daily/SKILL.md","frontmatter":{"name":"daily","description":"d"},"resources":"dynamic"}`, ""},
		{"no resources", `{"uri":"skill://daily/SKILL.md","frontmatter":{"name":"daily","description":"d"}}`, "resources is missing"},
		{"resources other", `{"uri":"skill://daily/SKILL.md","frontmatter":{"name":"daily","description":"d"},"resources":"static"}`, "neither a list"},
		{"name mismatch", entryJSON("skill://pdf/SKILL.md", fm, map[string]string{"skill://pdf/SKILL.md": "x"}), `not in its name "pdf-forms"`},
		{"no name", entryJSON("skill://pdf/SKILL.md", `{"description":"d"}`, map[string]string{"skill://pdf/SKILL.md": "x"}), "no name"},
		{"no description", entryJSON("skill://pdf/SKILL.md", `{"name":"pdf"}`, map[string]string{"skill://pdf/SKILL.md": "x"}), "no description"},
		{"frontmatter not object", entryJSON("skill://pdf/SKILL.md", `["pdf"]`, nil), "not an object"},
		{"huge frontmatter", entryJSON("skill://pdf/SKILL.md", `{"name":"pdf","description":"`+strings.Repeat("a", MaxFrontmatterBytes)+`"}`, nil), "over the 65536"},
		{"not SKILL.md", entryJSON("skill://pdf/README.md", fm, nil), "does not name a skill's SKILL.md"},
		{"no scheme", entryJSON("pdf-forms/SKILL.md", fm, nil), "not a URI"},
		{"climbing skill path", entryJSON("skill://a/../pdf-forms/SKILL.md", fm, nil), "climbs"},
		{"SKILL.md unlisted", entryJSON("skill://pdf-forms/SKILL.md", fm, map[string]string{"skill://pdf-forms/a.md": "x"}), "does not list"},
		{"file outside", entryJSON("skill://pdf-forms/SKILL.md", fm, map[string]string{"skill://pdf-forms/SKILL.md": "x", "skill://other/a.md": "y"}), "not inside the skill"},
		{"file climbing", entryJSON("skill://pdf-forms/SKILL.md", fm, map[string]string{"skill://pdf-forms/SKILL.md": "x", "skill://pdf-forms/../x/a.md": "y"}), "climbs"},
		{"file encoded climb", entryJSON("skill://pdf-forms/SKILL.md", fm, map[string]string{"skill://pdf-forms/SKILL.md": "x", "skill://pdf-forms/%2E%2E/a.md": "y"}), "percent-encoding"},
		{"file backslash", entryJSON("skill://pdf-forms/SKILL.md", fm, map[string]string{"skill://pdf-forms/SKILL.md": "x", `skill://pdf-forms/..\a.md`: "y"}), "backslash"},
		{"bad digest", `{"uri":"skill://pdf-forms/SKILL.md","frontmatter":` + fm + `,"resources":[{"uri":"skill://pdf-forms/SKILL.md","digest":"md5:00","size":1}]}`, "not sha256"},
		{"upper digest", `{"uri":"skill://pdf-forms/SKILL.md","frontmatter":` + fm + `,"resources":[{"uri":"skill://pdf-forms/SKILL.md","digest":"` + strings.ToUpper(digest) + `","size":1}]}`, "not sha256"},
		{"huge file", `{"uri":"skill://pdf-forms/SKILL.md","frontmatter":` + fm + `,"resources":[{"uri":"skill://pdf-forms/SKILL.md","digest":"` + digest + `","size":52428800}]}`, "over the 8388608"},
		{"listed twice", `{"uri":"skill://pdf-forms/SKILL.md","frontmatter":` + fm + `,"resources":[{"uri":"skill://pdf-forms/SKILL.md","digest":"` + digest + `","size":1},{"uri":"skill://pdf-forms/SKILL.md","digest":"` + digest + `","size":1}]}`, "listed twice"},
		{"not json", `{"uri":`, "invalid skill entry"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e, err := Parse([]byte(tc.raw))
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Parse: %v", err)
				}
				if e.Name == "" || e.Description == "" || (!e.Dynamic && len(e.Files) == 0) {
					t.Fatalf("entry incomplete: %+v", e)
				}
				return
			}
			if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse error = %v, want ErrInvalid with %q", err, tc.want)
			}
		})
	}
}

func TestParseTooManyFiles(t *testing.T) {
	t.Parallel()
	files := map[string]string{"skill://big/SKILL.md": "x"}
	for i := range MaxFiles {
		files[fmt.Sprintf("skill://big/f%d.md", i)] = "y"
	}
	_, err := Parse([]byte(entryJSON("skill://big/SKILL.md", `{"name":"big","description":"d"}`, files)))
	if err == nil || !strings.Contains(err.Error(), "513 files") {
		t.Fatalf("Parse = %v, want a refusal of 513 files", err)
	}
}

func TestVerify(t *testing.T) {
	t.Parallel()
	e, err := Parse([]byte(entryJSON("skill://pdf-forms/SKILL.md", `{"name":"pdf-forms","description":"d"}`,
		map[string]string{"skill://pdf-forms/SKILL.md": "hello", "skill://pdf-forms/a.md": "world"})))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, uri, content, want string
	}{
		{"match", "skill://pdf-forms/SKILL.md", "hello", ""},
		{"other file", "skill://pdf-forms/a.md", "world", ""},
		{"same size other bytes", "skill://pdf-forms/SKILL.md", "hellO", "digest mismatch"},
		{"other size", "skill://pdf-forms/SKILL.md", "hello!", "is 6 bytes, the manifest says 5"},
		{"unlisted", "skill://pdf-forms/b.md", "x", "not listed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := e.Verify(tc.uri, []byte(tc.content))
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, ErrVerify) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Verify = %v, want ErrVerify with %q", err, tc.want)
			}
		})
	}
}

func TestQualifyRoundTrip(t *testing.T) {
	t.Parallel()
	tests := []struct {
		key, uri, want string
	}{
		{"docs", "skill://pdf-forms/SKILL.md", "skill://docs/pdf-forms/SKILL.md"},
		{"docs", "skill://acme/billing/refunds/ref/a.md", "skill://docs/acme/billing/refunds/ref/a.md"},
		{"gh", "github://o/r/refunds/SKILL.md", "skill://gh~github/o/r/refunds/SKILL.md"},
		{"my server~1", "skill://x/SKILL.md", "skill://my%20server%7E1/x/SKILL.md"},
		{"@scope:pkg", "skill://x/SKILL.md", "skill://%40scope%3Apkg/x/SKILL.md"},
	}
	for _, tc := range tests {
		t.Run(tc.key+" "+tc.uri, func(t *testing.T) {
			t.Parallel()
			got, err := Qualify(tc.key, tc.uri)
			if err != nil || got != tc.want {
				t.Fatalf("Qualify = %q, %v; want %q", got, err, tc.want)
			}
			k, o, ok := Unqualify(got)
			if !ok || k != tc.key || o != tc.uri {
				t.Fatalf("Unqualify(%q) = %q, %q, %v; want %q, %q", got, k, o, ok, tc.key, tc.uri)
			}
		})
	}
}

func TestUnqualifyRefuses(t *testing.T) {
	t.Parallel()
	for _, uri := range []string{
		"file:///etc/passwd", "skill://", "skill://docs", "skill://docs/", "skill:///x/SKILL.md",
		"skill://d%6Fcs/x/SKILL.md", // a kept byte escaped: not the one spelling
		"skill://a%2/x", "skill://a%zz/x", "skill://a~/x", "skill://a~1x/x", "skill://a b/x",
	} {
		if k, o, ok := Unqualify(uri); ok {
			t.Errorf("Unqualify(%q) = %q, %q; want a refusal", uri, k, o)
		}
	}
}

func TestSearchServerNames(t *testing.T) {
	t.Parallel()
	mk := func(path string) *Entry {
		return &Entry{Path: path, Name: path[strings.LastIndexByte(path, '/')+1:], Description: "d " + path}
	}
	srv, names, err := SearchServer("docs", []*Entry{mk("acme/refunds"), mk("acme.refunds"), mk("ünï/x"), mk(strings.Repeat("a/", 100) + "deep")})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"acme.refunds", "acme.refunds-2", "__n__.x"}
	for i, w := range want {
		if names[i] != w {
			t.Errorf("names[%d] = %q, want %q", i, names[i], w)
		}
	}
	if !strings.HasSuffix(names[3], ".deep") || len(names[3]) > 128 {
		t.Errorf("deep name %q", names[3])
	}
	if len(srv.Tools) != 4 || srv.Tools[0].Title != "acme/refunds" {
		t.Fatalf("documents: %d, first titled %q", len(srv.Tools), srv.Tools[0].Title)
	}
}
