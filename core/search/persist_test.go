package search_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"strings"
	"testing"

	"github.com/toolsearch/toolsearch/core/catalog"
	"github.com/toolsearch/toolsearch/core/search"
	"github.com/toolsearch/toolsearch/internal/sharedtest"
)

// sameAnswers checks that two indexes answer every query alike: hits,
// scores, explanations, totals and nearest servers.
func sameAnswers(t *testing.T, got, want *search.Index, queries []string) {
	t.Helper()
	ctx := context.Background()
	for _, q := range queries {
		for _, mode := range []search.Mode{search.ModeAuto, search.ModeRegex} {
			req := search.Request{Query: q, MaxResults: 10, Mode: mode, Explain: true}
			g, gerr := got.Search(ctx, req)
			w, werr := want.Search(ctx, req)
			if errors.Is(gerr, search.ErrTimeExceeded) || errors.Is(werr, search.ErrTimeExceeded) {
				continue // a regex ran out of time on a slow machine (under the race detector)
			}
			if gerr != nil || werr != nil {
				if gerr == nil || werr == nil {
					t.Fatalf("%q (%s): error %v, built index %v", q, mode, gerr, werr)
				}
				continue
			}
			if a, b := describe(g), describe(w); a != b {
				if mode == search.ModeAuto && g.Form != w.Form &&
					(g.Form == search.FormRegex || w.Form == search.FormRegex) {
					// Auto mode read a pattern as words on the side where
					// its regex ran out of time (under the race detector
					// on a loaded machine); a regex that runs to the end
					// answers alike on both, as ModeRegex checks.
					continue
				}
				t.Fatalf("%q (%s):\nloaded %s\n built %s", q, mode, a, b)
			}
		}
	}
}

func describe(r search.Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s total=%d unknown=%v nearest=%v:", r.Form, r.Total, r.Unknown, r.NearestServers)
	for _, h := range r.Hits {
		fmt.Fprintf(&b, " %s(%v; %s)", h.Tool.ID(), h.Score, h.Why)
	}
	return b.String()
}

// persistQueries is some fixed queries and, for every 251st tool (every
// 2,008th under the race detector, which makes each regex search several
// times slower), its name and the start of its description.
func persistQueries(snap *catalog.Snapshot) []string {
	qs := []string{"create issue", "send a message to the channel", "+archive report", "zzzz nothing here",
		"list_repository", "select:" + snap.Tools()[0].ID(), snap.Servers()[1].Key, "^get_.*", "delete|remove"}
	every := 251
	if raceEnabled {
		every *= 8
	}
	for i, tl := range snap.Tools() {
		if i%every == 0 {
			qs = append(qs, tl.Name, strings.Join(strings.Fields(tl.Description)[:min(6, len(strings.Fields(tl.Description)))], " "))
		}
	}
	return qs
}

// builtAndLoaded builds snap's index, saves it and loads it again,
// returning both indexes and the saved bytes.
func builtAndLoaded(t *testing.T, snap *catalog.Snapshot) (built, loaded *search.Index, data []byte) {
	t.Helper()
	built = search.Build(snap)
	data, err := built.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	loaded, err = search.Load(snap, data)
	if err != nil {
		t.Fatal(err)
	}
	return built, loaded, data
}

func TestSavedIndexAnswersAlike(t *testing.T) {
	t.Parallel()
	snaps := map[string]func(testing.TB) *catalog.Snapshot{"made-up": benchCatalog, "hinted": hintedCatalog, "real": sharedtest.Catalog}
	for name, load := range snaps {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			snap := load(t)
			built, loaded, data := builtAndLoaded(t, snap)
			if !bytes.Equal(loaded.SavedFingerprint(), search.Fingerprint(snap)) || built.SavedFingerprint() != nil {
				t.Error("SavedFingerprint is not the snapshot's for a loaded index, or not nil for a built one")
			}
			if loaded.Len() != built.Len() || loaded.Version() != built.Version() {
				t.Fatalf("loaded %d tools at version %d, built %d at %d", loaded.Len(), loaded.Version(), built.Len(), built.Version())
			}
			sameAnswers(t, loaded, built, persistQueries(snap))
			// A loaded index updates like a built one.
			servers := snap.Servers()
			changed := append([]*catalog.Server(nil), servers[1:]...)
			next, err := catalog.NewSnapshot(changed...)
			if err != nil {
				t.Fatal(err)
			}
			sameAnswers(t, loaded.Update(next, servers[0].Key), built.Update(next, servers[0].Key), persistQueries(next))
			// Saving again gives the same bytes.
			again, err := loaded.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			if string(again) != string(data) {
				t.Error("a loaded index saves differently from the index it was loaded from")
			}
		})
	}
}

func TestSavedIndexRefusesAnotherCatalog(t *testing.T) {
	t.Parallel()
	snap := benchCatalog(t)
	data, err := search.Build(snap).MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(data, search.Fingerprint(snap)) {
		t.Error("the saved index does not carry the snapshot's fingerprint")
	}
	servers := snap.Servers()
	replace := func(i int, srv *catalog.Server) *catalog.Snapshot {
		out := append([]*catalog.Server(nil), servers...)
		out[i] = srv
		s, err := catalog.NewSnapshot(out...)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	raws := func(s *catalog.Server) []json.RawMessage {
		var out []json.RawMessage
		for _, tl := range s.Tools {
			out = append(out, tl.Raw)
		}
		return out
	}
	edited := raws(servers[3])
	edited[2] = json.RawMessage(`{"name":"edited_tool","description":"Changed."}`)
	mk := func(key string, r []json.RawMessage, kw []string) *catalog.Server {
		s, err := catalog.NewServer(key, r, kw, false)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	empty, err := catalog.NewSnapshot(append(append([]*catalog.Server(nil), servers...), mk("zz-empty", nil, nil))...)
	if err != nil {
		t.Fatal(err)
	}
	other, err := catalog.NewSnapshot(servers[:len(servers)-1]...)
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]*catalog.Snapshot{
		"a tool edited":          replace(3, mk(servers[3].Key, edited, nil)),
		"server keywords":        replace(5, mk(servers[5].Key, raws(servers[5]), []string{"extra"})),
		"a server without tools": empty,
		"a server removed":       other,
	} {
		if _, err := search.Load(s, data); !errors.Is(err, search.ErrStale) {
			t.Errorf("%s: Load gave %v, want ErrStale", name, err)
		}
		if bytes.Equal(search.Fingerprint(s), search.Fingerprint(snap)) {
			t.Errorf("%s: same fingerprint", name)
		}
	}
	w := search.DefaultWeights
	w.K1 = 1.5
	if _, err := search.LoadWith(snap, data, w); !errors.Is(err, search.ErrStale) {
		t.Errorf("other weights: Load gave %v, want ErrStale", err)
	}
	if _, err := search.Build(snap).Update(replace(3, mk(servers[3].Key, edited, nil)), servers[3].Key).MarshalBinary(); err == nil {
		t.Error("an updated index was saved")
	}
}

func TestSavedIndexDamaged(t *testing.T) {
	t.Parallel()
	snap := benchCatalog(t)
	data, err := search.Build(snap).MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{0, 1, 10, len(data) / 3, len(data) / 2, len(data) - 5, len(data) - 1} {
		if _, err := search.Load(snap, data[:n]); err == nil {
			t.Errorf("loaded the first %d of %d bytes", n, len(data))
		}
	}
	for _, at := range []int{len(data) / 4, len(data) / 2, len(data) - 10} {
		bad := append([]byte(nil), data...)
		bad[at] ^= 0x10
		if _, err := search.Load(snap, bad); err == nil || !strings.Contains(err.Error(), "damaged") {
			t.Errorf("a flipped bit at %d: %v", at, err)
		}
	}
}

// TestSavedIndexBadFrequency checks that Load names a posting whose
// saturated term frequency is out of range, in a saved index whose
// checksum is right.
func TestSavedIndexBadFrequency(t *testing.T) {
	t.Parallel()
	snap := fuzzSnapshot(t)
	data, err := search.Build(snap).MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []float32{float32(math.NaN()), -0.5, 1.5} {
		// The last posting ends the data before the checksum: its
		// frequency (4 bytes), then its fields (1 byte).
		bad := append([]byte(nil), data[:len(data)-4]...)
		binary.LittleEndian.PutUint32(bad[len(bad)-5:], math.Float32bits(v))
		bad = binary.LittleEndian.AppendUint32(bad, crc32.Checksum(bad, crc32.MakeTable(crc32.Castagnoli)))
		if _, err := search.Load(snap, bad); err == nil || !strings.Contains(err.Error(), "saturated term frequency") {
			t.Errorf("frequency %v: %v", v, err)
		}
	}
}

// FuzzLoad feeds damaged saved indexes to Load: it must refuse them or
// return an index that searches, never panic.
func FuzzLoad(f *testing.F) {
	snap := fuzzSnapshot(f)
	data, err := search.Build(snap).MarshalBinary()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add(data[:len(data)/2])
	f.Add([]byte("toolsearch index\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ix, err := search.Load(snap, data)
		if err != nil {
			return
		}
		if _, err := ix.Search(context.Background(), search.Request{Query: "create issue"}); err != nil {
			t.Fatal(err)
		}
	})
}

func fuzzSnapshot(tb testing.TB) *catalog.Snapshot {
	srv, err := catalog.NewServer("github", []json.RawMessage{
		json.RawMessage(`{"name":"create_issue","description":"Open a new issue in a repository.","inputSchema":{"type":"object","properties":{"title":{"description":"Issue title"}}}}`),
		json.RawMessage(`{"name":"list_pull_requests","description":"List pull requests of a repository."}`),
	}, nil, false)
	if err != nil {
		tb.Fatal(err)
	}
	snap, err := catalog.NewSnapshot(srv)
	if err != nil {
		tb.Fatal(err)
	}
	return snap
}
