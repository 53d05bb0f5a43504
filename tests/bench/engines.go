package bench

import (
	"context"
	"fmt"
	"strings"
	"unicode"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search/query"
	index "github.com/blevesearch/bleve_index_api"

	"github.com/toolsearch/toolsearch/core/catalog"
	"github.com/toolsearch/toolsearch/core/search"
)

// TopK is how many results every query asks for.
const TopK = 5

// Engine builds a searchable index from a catalog snapshot.
type Engine interface {
	// Name is the engine's name in benchmark names.
	Name() string
	// Build indexes every tool of snap.
	Build(snap *catalog.Snapshot) (Searcher, error)
}

// Searcher answers queries with tool IDs ("server/name"), best first.
type Searcher interface {
	Search(ctx context.Context, q string, k int) ([]string, error)
	// Close releases what the index holds; it is unusable afterwards.
	Close() error
}

// Engines are the engines compared, toolsearch first.
var Engines = []Engine{Toolsearch{}, Bleve{}, Bleve{PerField: true}}

// Toolsearch is this repository's engine: search.Build and
// (*search.Index).Search with the default mode (auto) and weights.
type Toolsearch struct{}

// Name implements Engine.
func (Toolsearch) Name() string { return "toolsearch" }

// Build implements Engine.
func (Toolsearch) Build(snap *catalog.Snapshot) (Searcher, error) {
	return toolsearchIndex{search.Build(snap)}, nil
}

type toolsearchIndex struct{ ix *search.Index }

func (t toolsearchIndex) Search(ctx context.Context, q string, k int) ([]string, error) {
	res, err := t.ix.Search(ctx, search.Request{Query: q, MaxResults: k})
	if err != nil {
		return nil, err
	}
	out := make([]string, len(res.Hits))
	for i, h := range res.Hits {
		out[i] = h.Tool.ID()
	}
	return out, nil
}

func (toolsearchIndex) Close() error { return nil }

// Bleve is bleve v2 with the scorch backend held in memory (empty path:
// no files, no persister, no merger) and BM25 scoring. The documents go in
// as one batch, so the index is one segment, the fastest shape for queries
// (an in-memory scorch index never merges segments).
//
// Each tool is one document made from BleveDoc's five texts, analysed with
// bleve's "en" analyzer: unicode word segmentation, English possessive
// removal, lower case, English stop words and the Porter stemmer. That is
// the closest bleve has to toolsearch's own analysis (lower case, stop
// words, Porter2 stemming); the "standard" analyzer would not stem, so
// "repositories" would not meet "repository" and bleve would be judged on
// worse matching. Fields are indexed only: no stored values, term vectors or
// doc values, which toolsearch does not keep either.
//
// Engine "bleve" (the default) joins the five texts into one field "all"
// and runs a query as one MatchQuery on it (OR of the query's analysed
// terms): one posting list per query term, as in toolsearch. It is both the
// cheaper and the better-ranking of the two bleve set-ups, so the fair
// baseline.
//
// Engine "bleve-fields" (PerField) indexes the five texts as five fields
// and runs a query as a DisjunctionQuery of one MatchQuery per field, each
// boosted by toolsearch's default field weight (search.DefaultWeights.Field):
// the literal bleve spelling of a field-weighted query. It reads five
// posting lists per term and ranks worse (bleve's disjunction multiplies by
// the share of clauses matched, so a tool found in one field loses out).
//
// Both return the top TopK.
type Bleve struct{ PerField bool }

// Name implements Engine.
func (b Bleve) Name() string {
	if b.PerField {
		return "bleve-fields"
	}
	return "bleve"
}

// Fields of a bleve document, in the order of toolsearch's search.Field.
var bleveFields = [...]string{"name", "server", "title", "description", "params"}

// BleveDoc is the document bleve indexes for a tool. Identifiers (the tool
// name, parameter names) are given both as written and split into words at
// '_', '-', '.', '/' and case changes, as toolsearch's analyzer splits them:
// bleve's unicode tokenizer keeps "create_issue" as one token, so without
// the split a query saying "create issue" would never reach the name.
func BleveDoc(t *catalog.Tool, srv *catalog.Server) map[string]any {
	var extra strings.Builder
	extra.WriteString(t.Title)
	extra.WriteByte(' ')
	extra.WriteString(t.SearchHint)
	for _, k := range t.Keywords {
		extra.WriteByte(' ')
		extra.WriteString(k)
	}
	var params strings.Builder
	for _, p := range t.Params() {
		params.WriteString(withParts(p.Name))
		params.WriteByte(' ')
		params.WriteString(p.Description)
		params.WriteByte(' ')
	}
	return map[string]any{
		"name":        withParts(t.Name),
		"server":      srv.Key + " " + srv.Title + " " + srv.Package,
		"title":       extra.String(),
		"description": t.Description,
		"params":      params.String(),
	}
}

// withParts returns an identifier followed by its parts, split at '_', '-',
// '.', '/' and lower-to-upper case changes: "createPullRequest" →
// "createPullRequest create Pull Request".
func withParts(id string) string {
	var b strings.Builder
	b.Grow(2*len(id) + 1)
	b.WriteString(id)
	b.WriteByte(' ')
	prev := rune(0)
	for _, r := range id {
		switch {
		case r == '_' || r == '-' || r == '.' || r == '/':
			b.WriteByte(' ')
		case unicode.IsUpper(r) && (unicode.IsLower(prev) || unicode.IsDigit(prev)):
			b.WriteByte(' ')
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
		prev = r
	}
	return b.String()
}

// compositeField is the one field of a composite bleve document.
const compositeField = "all"

// compositeDoc joins the fields of a bleve document into one.
func compositeDoc(d map[string]any) map[string]any {
	parts := make([]string, len(bleveFields))
	for i, f := range bleveFields {
		parts[i] = d[f].(string)
	}
	return map[string]any{compositeField: strings.Join(parts, " ")}
}

// BleveMapping is the index mapping of the "bleve-fields" engine: BM25, a
// static document mapping with the five text fields, the "en" analyzer. The
// "bleve" engine's is the same with the one field "all".
func BleveMapping() *mapping.IndexMappingImpl { return bleveMapping(bleveFields[:]) }

func bleveMapping(fields []string) *mapping.IndexMappingImpl {
	m := bleve.NewIndexMapping()
	m.ScoringModel = index.BM25Scoring
	m.DefaultAnalyzer = en.AnalyzerName
	m.IndexDynamic, m.StoreDynamic, m.DocValuesDynamic = false, false, false
	dm := bleve.NewDocumentStaticMapping()
	for _, f := range fields {
		fm := bleve.NewTextFieldMapping()
		fm.Analyzer = en.AnalyzerName
		fm.Store, fm.IncludeTermVectors, fm.IncludeInAll, fm.DocValues = false, false, false, false
		dm.AddFieldMappingsAt(f, fm)
	}
	m.DefaultMapping = dm
	return m
}

// Build implements Engine. bleve.NewUsing with an empty path makes an
// in-memory scorch index; no temporary directory is needed.
func (b Bleve) Build(snap *catalog.Snapshot) (Searcher, error) {
	m := BleveMapping()
	if !b.PerField {
		m = bleveMapping([]string{compositeField})
	}
	ix, err := bleve.NewUsing("", m, scorch.Name, scorch.Name, nil)
	if err != nil {
		return nil, fmt.Errorf("bleve: %w", err)
	}
	batch := ix.NewBatch()
	for _, srv := range snap.Servers() {
		for _, t := range srv.Tools {
			doc := BleveDoc(t, srv)
			if !b.PerField {
				doc = compositeDoc(doc)
			}
			if err := batch.Index(t.ID(), doc); err != nil {
				ix.Close()
				return nil, fmt.Errorf("bleve: %s: %w", t.ID(), err)
			}
		}
	}
	if err := ix.Batch(batch); err != nil {
		ix.Close()
		return nil, fmt.Errorf("bleve: %w", err)
	}
	return bleveIndex{ix, !b.PerField}, nil
}

type bleveIndex struct {
	ix        bleve.Index
	composite bool
}

// BleveQuery is the query the "bleve-fields" engine runs for q.
func BleveQuery(q string) query.Query {
	qs := make([]query.Query, len(bleveFields))
	for i, f := range bleveFields {
		mq := bleve.NewMatchQuery(q)
		mq.SetField(f)
		mq.SetBoost(search.DefaultWeights.Field[i])
		qs[i] = mq
	}
	return bleve.NewDisjunctionQuery(qs...)
}

func (b bleveIndex) Search(ctx context.Context, q string, k int) ([]string, error) {
	var bq query.Query
	if b.composite {
		mq := bleve.NewMatchQuery(q)
		mq.SetField(compositeField)
		bq = mq
	} else {
		bq = BleveQuery(q)
	}
	req := bleve.NewSearchRequestOptions(bq, k, 0, false)
	res, err := b.ix.SearchInContext(ctx, req)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(res.Hits))
	for i, h := range res.Hits {
		out[i] = h.ID
	}
	return out, nil
}

func (b bleveIndex) Close() error { return b.ix.Close() }

// bleveIndexOf exposes the bleve index of a Searcher built by Bleve, for
// tests that ask bleve for explanations.
func bleveIndexOf(s Searcher) (bleve.Index, bool) {
	b, ok := s.(bleveIndex)
	return b.ix, ok
}
