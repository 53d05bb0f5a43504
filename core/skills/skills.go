// Package skills reads the entries of the MCP Skills extension
// (io.modelcontextprotocol/skills): a skill's URI, its frontmatter kept
// verbatim, and the manifest of its files with their digests and sizes. It
// checks an entry before anything is built on it (the URI's shape, the
// skill's name as its last path segment, a complete manifest whose every
// file lies inside the skill, digests of the form sha256:<64 hex>, and the
// limits below), verifies a file's bytes against the manifest, and names
// the skills of many servers apart (naming.go).
//
// The package does no I/O and imports no transport or SDK.
package skills

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// ExtensionID is the extension's name in a server's capabilities.
const ExtensionID = "io.modelcontextprotocol/skills"

// FileName is the name of the file that makes a folder a skill.
const FileName = "SKILL.md"

// Limits on one skill. MaxFiles and MaxTotalBytes are the extension's own
// (every host must accept a skill within them); MaxFileBytes keeps any one
// file, base64-encoded in a resources/read answer, within the 16 MiB an
// upstream message may have; MaxFrontmatterBytes and MaxURIBytes bound
// what is kept per skill before any file is read.
const (
	MaxFiles            = 512
	MaxTotalBytes       = 16 << 20
	MaxFileBytes        = 8 << 20
	MaxFrontmatterBytes = 64 << 10
	MaxURIBytes         = 2048
	// MaxDepth bounds the segments of a skill's path and of a file's path
	// inside it.
	MaxDepth = 32
)

// ErrInvalid marks an entry the extension says a host must not load.
var ErrInvalid = errors.New("invalid skill entry")

// ErrVerify marks content that does not match the skill's manifest.
var ErrVerify = errors.New("skill file failed verification")

// File is one file of a skill's manifest.
type File struct {
	URI    string `json:"uri"`
	Digest string `json:"digest"`
	Size   int64  `json:"size"`
}

// Entry is one skill as a server described it. Frontmatter holds the
// server's bytes unchanged.
type Entry struct {
	// URI is the skill's SKILL.md.
	URI string
	// Root is URI without "/SKILL.md": the skill's folder.
	Root string
	// Path is the skill's path inside its scheme (acme/billing/refunds).
	Path string
	// Name and Description are the frontmatter's.
	Name, Description string
	// Frontmatter is the frontmatter object as the server sent it.
	Frontmatter json.RawMessage
	// Files is the manifest, nil when Dynamic.
	Files []File
	// Dynamic: the server publishes no digests ("resources": "dynamic").
	Dynamic bool
}

// wire is an entry as the extension writes it.
type wire struct {
	URI         string          `json:"uri"`
	Frontmatter json.RawMessage `json:"frontmatter"`
	Resources   json.RawMessage `json:"resources"`
}

// Parse reads and checks one entry of skills/list or skills/get. Every
// error wraps ErrInvalid and names what was wrong.
func Parse(raw []byte) (*Entry, error) {
	var w wire
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	e, err := parseWire(w)
	if err != nil {
		if w.URI != "" && len(w.URI) <= MaxURIBytes {
			return nil, fmt.Errorf("%w %s: %v", ErrInvalid, w.URI, err)
		}
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return e, nil
}

func parseWire(w wire) (*Entry, error) {
	_, path, err := SplitSkillURI(w.URI)
	if err != nil {
		return nil, err
	}
	e := &Entry{URI: w.URI, Root: strings.TrimSuffix(w.URI, "/"+FileName), Path: path}
	fm := bytes.TrimSpace(w.Frontmatter)
	switch {
	case len(fm) == 0 || fm[0] != '{':
		return nil, errors.New("frontmatter is not an object")
	case len(fm) > MaxFrontmatterBytes:
		return nil, fmt.Errorf("frontmatter is %d bytes, over the %d a skill may have", len(fm), MaxFrontmatterBytes)
	}
	var head struct {
		Name        *string `json:"name"`
		Description *string `json:"description"`
	}
	if err := json.Unmarshal(fm, &head); err != nil {
		return nil, fmt.Errorf("frontmatter: %v", err)
	}
	if head.Name == nil || *head.Name == "" {
		return nil, errors.New("frontmatter has no name")
	}
	if head.Description == nil || strings.TrimSpace(*head.Description) == "" {
		return nil, errors.New("frontmatter has no description")
	}
	e.Name, e.Description, e.Frontmatter = *head.Name, *head.Description, json.RawMessage(fm)
	last := path[strings.LastIndexByte(path, '/')+1:]
	if last != e.Name {
		return nil, fmt.Errorf("the skill's path ends in %q, not in its name %q", last, e.Name)
	}
	res := bytes.TrimSpace(w.Resources)
	switch {
	case len(res) == 0 || string(res) == "null":
		return nil, errors.New("resources is missing")
	case string(res) == `"dynamic"`:
		e.Dynamic = true
		return e, nil
	case res[0] != '[':
		return nil, errors.New(`resources is neither a list nor "dynamic"`)
	}
	if err := json.Unmarshal(res, &e.Files); err != nil {
		return nil, fmt.Errorf("resources: %v", err)
	}
	if err := e.checkFiles(); err != nil {
		return nil, err
	}
	return e, nil
}

// checkFiles checks the manifest: within the limits, every file inside the
// skill and listed once, well-formed digests, SKILL.md among them.
func (e *Entry) checkFiles() error {
	if len(e.Files) > MaxFiles {
		return fmt.Errorf("the skill lists %d files, over the %d a skill may have", len(e.Files), MaxFiles)
	}
	seen := make(map[string]bool, len(e.Files))
	var total int64
	hasSkill := false
	for i, f := range e.Files {
		if f.URI == e.URI {
			hasSkill = true
		} else if _, err := e.Rel(f.URI); err != nil {
			return fmt.Errorf("resources[%d]: %v", i, err)
		}
		if seen[f.URI] {
			return fmt.Errorf("resources[%d]: %s is listed twice", i, f.URI)
		}
		seen[f.URI] = true
		if err := checkDigest(f.Digest); err != nil {
			return fmt.Errorf("resources[%d] (%s): %v", i, f.URI, err)
		}
		switch {
		case f.Size < 0:
			return fmt.Errorf("resources[%d] (%s): size %d is negative", i, f.URI, f.Size)
		case f.Size > MaxFileBytes:
			return fmt.Errorf("resources[%d] (%s): %d bytes, over the %d a skill file may have", i, f.URI, f.Size, MaxFileBytes)
		}
		total += f.Size
	}
	if total > MaxTotalBytes {
		return fmt.Errorf("the skill's files add up to %d bytes, over the %d a skill may have", total, MaxTotalBytes)
	}
	if !hasSkill {
		return fmt.Errorf("resources does not list %s itself", e.URI)
	}
	return nil
}

// checkDigest checks the form sha256:<64 lowercase hex digits>.
func checkDigest(d string) error {
	hexPart, ok := strings.CutPrefix(d, "sha256:")
	if !ok || len(hexPart) != 64 {
		return fmt.Errorf("digest %.80q is not sha256:<64 hex digits>", d)
	}
	for i := 0; i < len(hexPart); i++ {
		if c := hexPart[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return fmt.Errorf("digest %.80q is not sha256:<64 lowercase hex digits>", d)
		}
	}
	return nil
}

// Digest is the extension's digest of content: sha256:<hex>.
func Digest(content []byte) string {
	sum := sha256.Sum256(content)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// SplitSkillURI splits the URI of a SKILL.md into its scheme and the
// skill's path, checking both: scheme://path/SKILL.md, the path one or more
// clean segments (CheckPath).
func SplitSkillURI(uri string) (scheme, path string, err error) {
	if len(uri) > MaxURIBytes {
		return "", "", fmt.Errorf("the URI is %d bytes, over the %d a skill URI may have", len(uri), MaxURIBytes)
	}
	scheme, rest, ok := strings.Cut(uri, "://")
	if !ok || !validScheme(scheme) {
		return "", "", fmt.Errorf("%q is not a URI of the form scheme://path/%s", uri, FileName)
	}
	path, ok = strings.CutSuffix(rest, "/"+FileName)
	if !ok || path == "" {
		return "", "", fmt.Errorf("%q does not name a skill's %s", uri, FileName)
	}
	if err := CheckPath(path); err != nil {
		return "", "", fmt.Errorf("%q: %v", uri, err)
	}
	return scheme, path, nil
}

// validScheme reports whether s is a URI scheme (RFC 3986).
func validScheme(s string) bool {
	if s == "" || len(s) > 32 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case i > 0 && (c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return false
		}
	}
	return true
}

// CheckPath checks a "/"-separated path inside a skill namespace: no empty,
// "." or ".." segment, no backslash, no query or fragment, no control
// character, no percent-encoded dot, slash or backslash (which a server
// could decode into a climb), valid UTF-8, at most MaxDepth segments.
func CheckPath(p string) error {
	if !utf8.ValidString(p) {
		return errors.New("the path is not valid UTF-8")
	}
	if strings.HasPrefix(p, "/") {
		return errors.New("the path is absolute")
	}
	segs := strings.Split(p, "/")
	if len(segs) > MaxDepth {
		return fmt.Errorf("the path has %d segments, over %d", len(segs), MaxDepth)
	}
	for _, s := range segs {
		switch s {
		case "":
			return fmt.Errorf("the path %q has an empty segment", p)
		case ".", "..":
			return fmt.Errorf("the path %q climbs (%q)", p, s)
		}
	}
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case c < 0x20 || c == 0x7f:
			return fmt.Errorf("the path %q has a control character", p)
		case c == '\\':
			return fmt.Errorf("the path %q has a backslash", p)
		case c == '?' || c == '#':
			return fmt.Errorf("the path %q has a query or fragment", p)
		case c == '%':
			if i+2 < len(p) {
				switch strings.ToLower(p[i+1 : i+3]) {
				case "2e", "2f", "5c", "00":
					return fmt.Errorf("the path %q hides a dot, slash, backslash or NUL in percent-encoding", p)
				}
			}
		}
	}
	return nil
}

// Rel returns the path of uri inside the skill (references/FORMS.md), or
// an error when uri is not a file inside it.
func (e *Entry) Rel(uri string) (string, error) {
	rel, ok := strings.CutPrefix(uri, e.Root+"/")
	if !ok || rel == "" {
		return "", fmt.Errorf("%.200q is not inside the skill %s", uri, e.Root)
	}
	if err := CheckPath(rel); err != nil {
		return "", fmt.Errorf("%.200q: %v", uri, err)
	}
	return rel, nil
}

// File returns the manifest's entry for uri.
func (e *Entry) File(uri string) (File, bool) {
	for _, f := range e.Files {
		if f.URI == uri {
			return f, true
		}
	}
	return File{}, false
}

// Verify checks content read at uri against the manifest: the file must be
// listed, and have the listed size and digest. A dynamic skill has nothing
// to verify against; its files are held to MaxFileBytes. Errors wrap
// ErrVerify.
func (e *Entry) Verify(uri string, content []byte) error {
	if e.Dynamic {
		if len(content) > MaxFileBytes {
			return fmt.Errorf("%w: %s is %d bytes, over the %d a skill file may have", ErrVerify, uri, len(content), MaxFileBytes)
		}
		return nil
	}
	f, ok := e.File(uri)
	if !ok {
		return fmt.Errorf("%w: %s is not listed in the manifest of skill %s; call skills/get to refresh it", ErrVerify, uri, e.URI)
	}
	if int64(len(content)) != f.Size {
		return fmt.Errorf("%w: %s is %d bytes, the manifest says %d; the server changed the file or misreports it: call skills/get to refresh",
			ErrVerify, uri, len(content), f.Size)
	}
	if d := Digest(content); d != f.Digest {
		return fmt.Errorf("%w: digest mismatch for %s: the content is %s, the manifest says %s; the server changed the file or misreports it: call skills/get to refresh",
			ErrVerify, uri, d, f.Digest)
	}
	return nil
}

// Wire writes the entry as the extension does, each URI passed through
// rename (the skill's and every file's); the frontmatter is written as it
// came.
func (e *Entry) Wire(rename func(string) string) json.RawMessage {
	var res any = "dynamic"
	if !e.Dynamic {
		files := make([]File, len(e.Files))
		for i, f := range e.Files {
			files[i] = File{URI: rename(f.URI), Digest: f.Digest, Size: f.Size}
		}
		res = files
	}
	rb, _ := json.Marshal(res)
	b, _ := json.Marshal(wire{URI: rename(e.URI), Frontmatter: e.Frontmatter, Resources: rb})
	return b
}
