package proxy

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// maxModelKey is the longest key modelKey returns.
const maxModelKey = maxModelName + len("…#") + 16

// TestModelKey: a model name is kept whole up to maxModelName bytes, and
// past it cut at a character boundary with a digest, so that keys are
// bounded, valid UTF-8 and distinct for distinct names.
func TestModelKey(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("m", 1<<20)
	tests := []struct {
		name, in string
		wantSame bool
	}{
		{"short", "claude-opus-5", true},
		{"empty", "", true},
		{"exactly the bound", strings.Repeat("a", maxModelName), true},
		{"one byte over", strings.Repeat("a", maxModelName+1), false},
		{"a character across the bound", strings.Repeat("a", maxModelName-1) + "é" + "tail", false},
		{"four-byte characters", strings.Repeat("😀", 100), false},
		{"a megabyte", long, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := modelKey(tt.in)
			if (got == tt.in) != tt.wantSame {
				t.Fatalf("modelKey kept the name: %v, want %v", got == tt.in, tt.wantSame)
			}
			if len(got) > maxModelKey || !utf8.ValidString(got) {
				t.Fatalf("key of %d bytes (bound %d), valid UTF-8 %v: %q", len(got), maxModelKey, utf8.ValidString(got), got)
			}
			if !tt.wantSame && !strings.HasPrefix(tt.in, strings.SplitN(got, "…#", 2)[0]) {
				t.Fatalf("key %q is not a prefix of the name and a digest", got)
			}
		})
	}
	if modelKey(long+"a") == modelKey(long+"b") {
		t.Fatal("two long names with one prefix share a key")
	}
}

// TestAttackManyModelNames: a client sending many distinct model names
// (each a request the upstream refuses at first, then takes lower) does
// not grow the proxy's memory past maxModels entries of bounded keys; the
// least recently used model is forgotten first, so a model in use keeps
// its level.
func TestAttackManyModelNames(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		count int
		size  int // bytes of each name
	}{
		{"a hundred thousand short names", 100_000, 16},
		{"a thousand 64 KiB names", 1000, 64 << 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ls := newLevels(Config{})
			used := modelKey("claude-opus-5")
			if !ls.take(used, level{fold: true}, "system message refused") {
				t.Fatal("not remembered")
			}
			pad := strings.Repeat("x", tt.size)
			for i := range tt.count {
				name := fmt.Sprintf("%d-%s", i, pad)[:tt.size]
				ls.take(modelKey(name), level{emulate: true}, "tool_reference refused")
				if i%(maxModels/2) == 0 {
					ls.get(used) // the model in use
				}
			}
			if n := ls.len(); n != maxModels {
				t.Fatalf("%d models remembered, want %d", n, maxModels)
			}
			ls.mu.Lock()
			keyBytes := 0
			for k := range ls.m {
				keyBytes += len(k)
			}
			ls.mu.Unlock()
			if keyBytes > maxModels*maxModelKey {
				t.Fatalf("keys hold %d bytes, bound %d", keyBytes, maxModels*maxModelKey)
			}
			if l, _ := ls.get(used); l != (level{fold: true}) {
				t.Fatalf("the model in use lost its level: %+v", l)
			}
			first := modelKey(fmt.Sprintf("%d-%s", 0, pad)[:tt.size])
			if l, _ := ls.get(first); l != ls.start {
				t.Fatalf("the least recently used model is still remembered: %+v", l)
			}
		})
	}
}
