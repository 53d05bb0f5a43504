package search

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"
)

// analysisOutput is, per analysisVersion, a hash of what the fixture
// catalog's saved index holds besides its fingerprint. When analysis
// changes (tokens, stemming, synonyms, compounds, field weights) the hash
// changes: bump analysisVersion, so that indexes saved by older programs
// are rebuilt rather than trusted, and record the new hash here.
var analysisOutput = map[int]string{
	1: "7a33afa3b7395b04bf54a9b35506bf01d0a921dce8dcd57996032e3c1f1ae5f7",
	2: "6a6d724205d68d53025b59cc9f6be8ba8d2ef5f32bafdb1ca1da43a8f678e4ba", // postings keep saturated frequencies
	3: "09f30ca7a6f5ba898c05545c408157f500d2776c7448804b26b118611205edea", // a hints field, action classes, weak name parts
	4: "05acfa39bc7f69afa862b9ebe53d705839163b638f025c7461e0023b7ff127c4", // hints weighed one by one, tools' hint terms
	// A tool's hint terms keep the hints they start. The fixture has no
	// hints, so what it saves is as before.
	5: "05acfa39bc7f69afa862b9ebe53d705839163b638f025c7461e0023b7ff127c4",
	// In an index with written hints, every tool has phrasings of its own
	// (its name and the first sentence of its description), kept with its
	// hint terms, those that start a phrasing first. The fixture has no
	// hints, so what it saves is as before.
	6: "05acfa39bc7f69afa862b9ebe53d705839163b638f025c7461e0023b7ff127c4",
	// In an index with written hints, compounds split by the words of
	// the tools' definitions alone. The fixture has no hints, so what it
	// saves is as before.
	7: "05acfa39bc7f69afa862b9ebe53d705839163b638f025c7461e0023b7ff127c4",
}

func TestAnalysisVersionGuard(t *testing.T) {
	t.Parallel()
	_, ix := fixtureIndex(t)
	data, err := ix.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	body := data[len(savedMagic)+sha256.Size : len(data)-4]
	sum := sha256.Sum256(body)
	got := hex.EncodeToString(sum[:])
	want, ok := analysisOutput[analysisVersion]
	if !ok || got != want {
		t.Fatalf("the saved index of the fixture catalog changed (hash %s) but analysisVersion is still %d: "+
			"bump analysisVersion and record the hash in analysisOutput", got, analysisVersion)
	}
}
