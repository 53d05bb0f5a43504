package search

import (
	"math"
	"runtime"
	"sync"

	"github.com/toolsearch/toolsearch/core/catalog"
)

// buildChunk is how many tools a build goroutine takes at a time.
const buildChunk = 64

// rebuild indexes servers from scratch into a single segment.
func (ix *Index) rebuild(servers []*catalog.Server) {
	ix.segs = nil
	ix.n, ix.total = 0, 0
	ix.servers = make(map[string]*serverInfo, len(servers))
	ix.nextSrv = 0
	ntools := 0
	for _, srv := range servers {
		ntools += len(srv.Tools)
	}
	terms := make([][]string, len(servers))
	par := min(runtime.GOMAXPROCS(0), max(1, len(servers)/64))
	each(par, func(w int) {
		for k := w; k < len(servers); k += par {
			terms[k] = analyseServer(servers[k])
		}
	})
	infos := make([]*serverInfo, len(servers))
	jobs := make([]buildJob, 0, ntools)
	for k, srv := range servers {
		infos[k] = &serverInfo{srv: srv, idx: ix.nextSrv, terms: terms[k]}
		ix.nextSrv++
		ix.servers[srv.Key] = infos[k]
		for _, t := range srv.Tools {
			jobs = append(jobs, buildJob{t, terms[k]})
		}
	}
	// The names, the servers' trigrams and the map of server terms are
	// independent of the postings: make them meanwhile.
	names := make(chan *nameIndex, 1)
	go func() {
		for _, info := range infos {
			info.grams = serverGrams(info.srv)
		}
		x := newNameIndex(len(jobs))
		for _, j := range jobs {
			x.add(j.tool)
		}
		ix.indexServerTerms()
		names <- x
	}()

	ix.phrased = anyWritten(servers)
	docs, ans, done := analyseAll(jobs, ix.phrased)

	// Merge the workers' numbers into the first worker's dictionary and
	// add up the documents of each term the workers counted, then
	// renumber the documents of the other workers, their spans shared out
	// among goroutines.
	dict := &ans[0].dict
	df := make([]int32, len(dict.terms))
	ans[0].addDF(df, nil)
	var renumber []remapSpan
	for w := 1; w < len(ans); w++ {
		r := make([]int32, len(ans[w].dict.terms))
		for id, term := range ans[w].dict.terms {
			r[id] = dict.intern(term)
		}
		df = append(df, make([]int32, len(dict.terms)-len(df))...)
		ans[w].addDF(df, r)
		for _, sp := range done[w] {
			renumber = append(renumber, remapSpan{sp, r})
		}
	}
	each(min(len(ans), len(renumber)), func(g int) {
		for k := g; k < len(renumber); k += len(ans) {
			rs := renumber[k]
			for i := rs.lo; i < rs.hi; i++ {
				for t := range docs[i].terms {
					tf := &docs[i].terms[t]
					tf.id = rs.remap[tf.id]
				}
			}
		}
	})

	var lens [numFields]float64
	hints := 0
	for _, a := range docs {
		for f := range lens {
			lens[f] += float64(a.lens[f])
		}
		hints += len(a.hints)
	}
	// Compounds are split by the words of the tools' definitions alone:
	// how a tool's name is read never depends on other tools' hints.
	known := df
	if ix.phrased {
		known = definitionDF(docs, len(df))
	}
	dfOf := func(term string) int32 {
		if id := dict.lookup(term); id >= 0 {
			return known[id]
		}
		return 0
	}
	// Every word decompound adds is used by tools already, so it has a
	// number: the documents can be split in parallel.
	each(len(ans), func(w int) {
		for i := w * len(docs) / len(ans); i < (w+1)*len(docs)/len(ans); i++ {
			decompound(&docs[i], dfOf, dict.lookup)
		}
	})
	for f := range lens {
		ix.avgLen[f] = lens[f] / math.Max(1, float64(len(docs)))
	}
	// Hints are weighed one by one: their length is measured against
	// the average hint's.
	ix.avgLen[FieldHints] = lens[FieldHints] / math.Max(1, float64(hints))
	ix.df = make(map[string]int32, len(dict.terms))
	seg := ix.newSegment(docs, dict.terms, 0, ix.df, true)
	for _, srv := range servers {
		ix.servers[srv.Key].seg = seg
	}
	ix.segs = []*segment{seg}
	ix.n = len(docs)
	ix.total = len(docs)
	ix.setNameIDF(seg)
	each(2, func(i int) {
		if i == 0 {
			ix.indexGroups(seg)
		} else {
			indexBlockNames(seg)
		}
	})
	ix.names = <-names
}

// buildJob is one tool to analyse, with its server's terms.
type buildJob struct {
	tool  *catalog.Tool
	terms []string
}

// span is a range of jobs, jobs[lo:hi].
type span struct{ lo, hi int }

// remapSpan is a span of documents whose term numbers remap renumbers.
type remapSpan struct {
	span
	remap []int32
}

// workQueue hands out a worker's share of the jobs from the front, and
// lets workers that have finished theirs take chunks from the back.
type workQueue struct {
	mu sync.Mutex
	span
}

func (q *workQueue) take(fromBack bool) (span, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.lo >= q.hi {
		return span{}, false
	}
	if fromBack {
		s := span{max(q.lo, q.hi-buildChunk), q.hi}
		q.hi = s.lo
		return s, true
	}
	s := span{q.lo, min(q.hi, q.lo+buildChunk)}
	q.lo = s.hi
	return s, true
}

// analyseAll analyses every job on as many goroutines as there are
// processors, each with its own buildAnalyser. Each worker starts with a
// contiguous share of the jobs, so that it meets a few servers' vocabulary
// rather than every server's, then helps the others. It returns the
// documents, the analysers (whose dictionaries number the documents'
// terms) and, per worker, the spans of jobs it analysed.
//
// The documents carry their tools' own phrasings when phrasings is set.
func analyseAll(jobs []buildJob, phrasings bool) ([]analysed, []*buildAnalyser, [][]span) {
	docs := make([]analysed, len(jobs))
	workers := min(runtime.GOMAXPROCS(0), max(1, len(jobs)/256))
	ans := make([]*buildAnalyser, workers)
	done := make([][]span, workers)
	queues := make([]workQueue, workers)
	for w := range queues {
		queues[w].span = span{w * len(jobs) / workers, (w + 1) * len(jobs) / workers}
	}
	each(workers, func(w int) {
		an := newBuildAnalyser(len(jobs) / workers)
		an.phrasings = phrasings
		ans[w] = an
		for k := range workers {
			q := &queues[(w+k)%workers]
			for {
				s, ok := q.take(k > 0)
				if !ok {
					break
				}
				for i := s.lo; i < s.hi; i++ {
					docs[i] = an.tool(jobs[i].tool, jobs[i].terms)
				}
				done[w] = append(done[w], s)
			}
		}
	})
	return docs, ans, done
}

// anyWritten reports whether a tool of servers has written search hints.
func anyWritten(servers []*catalog.Server) bool {
	for _, srv := range servers {
		for _, t := range srv.Tools {
			if len(t.Hints) > 0 {
				return true
			}
		}
	}
	return false
}

// definitionDF counts, per term number, the documents of docs that have
// the term in a field other than their written hints.
func definitionDF(docs []analysed, terms int) []int32 {
	out := make([]int32, terms)
	for i := range docs {
		for _, tf := range docs[i].terms {
			if tf.inDefinition() {
				out[tf.id]++
			}
		}
	}
	return out
}
