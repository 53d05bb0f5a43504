// Package search is toolsearch's engine: an in-memory index over a catalog
// snapshot, and every query form a model or a user types to find a tool —
// select:a,b, an exact name, a server prefix, ranked keywords and natural
// language with +required terms, and Python-style regular expressions.
//
// The package does no I/O and imports no transport or SDK. An Index is
// immutable: Update returns a new Index that shares the unchanged parts, so
// searches never wait for indexing and never see half an update.
//
// # Scoring
//
// A keyword query is analysed like a document, into groups of a term and
// its synonyms, and every tool is scored by one formula, written in
// score.go: BM25F over the fields (name, server, title and keywords,
// hints, description, parameters), scaled by the share of the query the
// tool covers, the share of its name the query covers, how clearly the
// query names its server, the share of the query its best phrasing covers
// and whether one of its phrasings starts with the query's first term (the
// hint lead; a tool's phrasings are its name, the first sentence of its
// description and its written search hints), and, for a request that
// learns from use (Request.Learned), how strongly the tool was called
// after queries like this one, a bounded factor of at most 1 +
// Weights.Learned (learn.go). A tool with written hints is scored by two
// views, its definition and the same with its hints in place of its
// description, averaged part by part, so that hints lift a tool where they
// say the query better than its description and cost nothing to a tool
// without them. Hints are short texts of their own: in the hints field
// each is normalised by its own length (against the average hint's), not
// as one long text, and the tool's phrasing terms are kept with the
// phrasings they occur in and those they start, for the hint coverage and
// the hint lead. Every shortcut below bounds that formula with
// scoreModel.upper; Hit.Breakdown takes a score apart.
//
// # How a query avoids reading everything
//
// Documents are numbered server by server and cut into blocks of 64. Every
// posting list of 128 postings or more keeps, per block it touches, its
// largest saturated term frequency and the largest share of a tool's name the
// term can cover there (1 / the name idf of the block's tools with the term
// in their name), where the block starts in the list (kept apart from the
// maxima, which bounding reads alone), and per 64 blocks a bitmap of the
// blocks it touches with a count of the entries before them, so that a
// block's entry is one load and a popcount away. A keyword query:
//
//  1. bounds each block from those entries (short lists are read whole for
//     this; a word whose synonyms include two long lists or more has a merged
//     list, see below, so a query word costs one pass): the sum of each query
//     group's largest contribution in the block, scaled by the share of the
//     query the groups present there cover (coordination), by the strongest
//     server mention in the block and by the name coverage a tool there can
//     reach (per group, its largest idf × name share in the block, summed and
//     capped at 1); the hint coverage is bounded by the block's query
//     coverage, as a phrasing's words are its tool's, and the hint lead
//     by 1;
//  2. reads the block with the best bound (found without a heap), then the
//     others from the best bound down, leaving out at once those below the
//     k-th score, until it holds k hits and the next bound is below the k-th
//     score. A tool whose score with its hint coverage taken as its query
//     coverage is below the k-th score is left before its phrasings are
//     looked up, which costs more than the rest of its score.
//
// A word whose synonyms include two long lists or more (create, get,
// list, delete... 204 words at the real size, 409 at 10k, 617 at 100k) is
// read through a merged list built with the index: each tool any member (the
// word or a synonym) has is one posting of 6 bytes, its place in the block,
// whether the word itself is there, which member in the tool's name has the
// largest idf, and the best member's score, worked out as ranking works it
// out member by member, so that the sums are the same bit for bit
// (TestMergedLists checks every merged list against its members). The list
// has block entries of its own for bounding, and reading a block reads one
// run of it instead of a run of each member present, with no list lookups per
// member and no max over members.
//
// A block is read like the whole index used to be, group by group in the same
// order, into block-local accumulators, so hits, scores, order and
// explanations are exactly those of reading every list:
// TestPrunedMatchesExhaustive* compare both on the made-up and the real
// catalog with filters and required words, and FuzzPruned keeps comparing.
// Only Result.Total becomes a lower bound when blocks are skipped
// (total_at_least). An index split into segments by updates is read whole;
// the gateway rebuilds it once its catalog settles.
//
// Per dev query at 10k this reads 17 blocks of 157 on average, 7 for the
// median query, and 1.5k postings (625 for the median one; 2.1k and 869 with
// every member read apart); at 100k 72 blocks of 1,563 (28 for the median
// query) and 7.6k postings (9.9k with members apart) instead of 91k. Before
// block entries bounded name coverage (e6b859c), a query read at least 2k
// blocks, then worked out each remaining block's name coverage from the name
// postings: 10 blocks for the median query at 10k.
//
// Earlier attempts that bounded single terms or query groups over the whole
// index (MaxScore document at a time, term at a time with a switch to
// completing candidates) were exact but slower: a tool's bound had to assume
// every unread synonym and boost, so nearly every tool seen had to be
// checked. Bounding blocks works because a block holds a few servers' tools,
// so the words present in it, and the share of the query they cover, are
// known before any posting is read.
package search
