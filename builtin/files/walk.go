package files

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
)

// An entry is one non-folder found by a walk.
type entry struct {
	abs  string      // absolute path
	rel  string      // slash-separated, relative to the walk's start
	name string      // base name
	typ  fs.FileMode // type bits (regular, symlink, ...)
	d    fs.DirEntry
}

// walkOptions configure a walk.
type walkOptions struct {
	root     string // the root that contains start
	start    string // absolute folder to walk
	noIgnore bool   // do not read .gitignore files
	workers  int    // 0 means GOMAXPROCS
	// skipDir, when set, prunes a folder by its path relative to start.
	skipDir func(rel string) bool
}

// vcsDirs are never walked.
var vcsDirs = map[string]bool{".git": true, ".hg": true, ".svn": true, ".jj": true}

// batchSize is how many files one job carries.
const batchSize = 64

type walkJob struct {
	dir   string // absolute folder to read, "" for a batch of files
	rel   string // folder relative to start ("" for start)
	chain *ignoreChain
	files []entry
}

// walk visits every file under opts.start in parallel, skipping version
// control folders and, unless noIgnore, what .gitignore files exclude
// (those of the folders from the root down to start apply too). visit is
// called concurrently; it returns false to stop the walk. Folders that
// cannot be read are skipped. The walk ends early when ctx ends, returning
// ctx's error.
func walk(ctx context.Context, opts walkOptions, visit func(entry) bool) error {
	var chain *ignoreChain
	// prefix is start's path relative to the root, to make the rules of
	// the .gitignore files above start apply to paths relative to start.
	prefix := ""
	if !opts.noIgnore {
		chain = gitInfoExclude(opts.root)
		if rel, err := filepath.Rel(opts.root, opts.start); err == nil && rel != "." && !strings.HasPrefix(rel, "..") {
			prefix = filepath.ToSlash(rel)
			dir := opts.root
			chain = chain.with(dir, "")
			parts := strings.Split(prefix, "/")
			for i, p := range parts[:len(parts)-1] {
				dir = filepath.Join(dir, p)
				chain = chain.with(dir, strings.Join(parts[:i+1], "/"))
			}
		}
	}
	w := &walker{opts: opts, prefix: prefix, visit: visit, ctx: ctx}
	w.cond = sync.NewCond(&w.mu)
	w.queue = append(w.queue, walkJob{dir: opts.start, rel: "", chain: chain})
	n := opts.workers
	if n <= 0 {
		n = runtime.GOMAXPROCS(0)
	}
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.work()
		}()
	}
	wg.Wait()
	return ctx.Err()
}

type walker struct {
	opts   walkOptions
	prefix string
	visit  func(entry) bool
	ctx    context.Context

	mu      sync.Mutex
	cond    *sync.Cond
	queue   []walkJob
	active  int
	stopped bool
}

func (w *walker) stop() {
	w.mu.Lock()
	w.stopped = true
	w.queue = nil
	w.cond.Broadcast()
	w.mu.Unlock()
}

func (w *walker) work() {
	for {
		w.mu.Lock()
		for len(w.queue) == 0 && w.active > 0 && !w.stopped {
			w.cond.Wait()
		}
		if w.stopped || len(w.queue) == 0 {
			w.cond.Broadcast()
			w.mu.Unlock()
			return
		}
		job := w.queue[len(w.queue)-1]
		w.queue = w.queue[:len(w.queue)-1]
		w.active++
		w.mu.Unlock()

		var more []walkJob
		if w.ctx.Err() != nil {
			w.stop()
		} else if job.dir == "" {
			for _, e := range job.files {
				if !w.visit(e) {
					w.stop()
					break
				}
			}
		} else {
			more = w.readDir(job)
		}

		w.mu.Lock()
		w.active--
		if !w.stopped {
			w.queue = append(w.queue, more...)
		}
		w.cond.Broadcast()
		w.mu.Unlock()
	}
}

// readDir reads one folder and returns the jobs it makes: its subfolders
// and its files in batches.
func (w *walker) readDir(job walkJob) []walkJob {
	f, err := os.Open(job.dir)
	if err != nil {
		return nil
	}
	ents, _ := f.ReadDir(-1)
	f.Close()
	chain := job.chain
	if !w.opts.noIgnore {
		ignRel := w.prefix
		if job.rel != "" {
			if ignRel != "" {
				ignRel += "/"
			}
			ignRel += job.rel
		}
		chain = chain.with(job.dir, ignRel)
	}
	var jobs []walkJob
	var batch []entry
	for _, d := range ents {
		name := d.Name()
		typ := d.Type()
		isDir := typ.IsDir()
		if isDir && vcsDirs[name] {
			continue
		}
		rel := name
		if job.rel != "" {
			rel = job.rel + "/" + name
		}
		if chain != nil {
			ignRel := rel
			if w.prefix != "" {
				ignRel = w.prefix + "/" + rel
			}
			if chain.ignored(ignRel, isDir) {
				continue
			}
		}
		abs := filepath.Join(job.dir, name)
		if isDir {
			if w.opts.skipDir != nil && w.opts.skipDir(rel) {
				continue
			}
			jobs = append(jobs, walkJob{dir: abs, rel: rel, chain: chain})
			continue
		}
		batch = append(batch, entry{abs: abs, rel: rel, name: name, typ: typ, d: d})
		if len(batch) == batchSize {
			jobs = append(jobs, walkJob{files: batch})
			batch = nil
		}
	}
	if len(batch) > 0 {
		jobs = append(jobs, walkJob{files: batch})
	}
	return jobs
}
