package files

import (
	"context"
	"io/fs"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
)

// An entry is one non-folder found by a walk.
type entry struct {
	dir  *dirNode    // the folder that holds it, open
	abs  string      // absolute path
	rel  string      // slash-separated, relative to the walk's start
	name string      // base name
	typ  fs.FileMode // type bits (regular, symlink, ...)
}

// open opens the entry as a regular file, from its folder.
func (e entry) open() (*fileFD, error) { return e.dir.fd.openFile(e.name) }

// stat describes the entry itself (a link, not what it points to).
func (e entry) stat() (fileStat, error) { return e.dir.fd.lstat(e.name) }

// A dirNode is an open folder shared by the walk's jobs: each job that
// needs it holds one reference, and the last to finish closes it.
type dirNode struct {
	fd   *dirFD
	abs  string
	refs atomic.Int32
}

// release drops one reference to n.
func (n *dirNode) release() {
	if n.refs.Add(-1) == 0 {
		n.fd.close()
	}
}

// walkOptions configure a walk.
type walkOptions struct {
	roots  Roots
	start  *place // the folder to walk; the walk takes it over
	absDir string // its absolute path
	// noIgnore: do not read .gitignore files.
	noIgnore bool
	workers  int // 0 means GOMAXPROCS
	// skipDir, when set, prunes a folder by its path relative to start.
	skipDir func(rel string) bool
}

// vcsDirs are never walked.
var vcsDirs = map[string]bool{".git": true, ".hg": true, ".svn": true, ".jj": true}

// batchSize is how many files one job carries.
const batchSize = 64

// A walkJob is a folder to read or a batch of files to visit. It holds one
// reference to the folder it needs: the folder's parent (or, for the
// start, the start itself) or the folder that holds the files.
type walkJob struct {
	node  *dirNode // the folder this job holds
	name  string   // folder jobs: the folder's name in node ("" for the start)
	rel   string   // folder relative to start ("" for start)
	chain *ignoreChain
	files []entry // batch jobs: files in node
}

// walk visits every file under opts.start in parallel, skipping version
// control folders and, unless noIgnore, what .gitignore files exclude
// (those of the folders from the root down to start apply too). Every
// folder is opened from its parent without following links, so the walk
// stays inside the root whatever changes under it. visit is called
// concurrently; it returns false to stop the walk. Folders that cannot be
// read are skipped. The walk ends early when ctx ends, returning ctx's
// error.
func walk(ctx context.Context, opts walkOptions, visit func(entry) bool) error {
	var chain *ignoreChain
	// prefix is start's path relative to the root, to make the rules of
	// the .gitignore files above start apply to paths relative to start.
	prefix := ""
	if !opts.noIgnore {
		chain = opts.roots.ignoresAbove(opts.start)
		prefix = strings.Join(opts.start.names, "/")
	}
	w := &walker{opts: opts, prefix: prefix, visit: visit, ctx: ctx}
	w.cond = sync.NewCond(&w.mu)
	start := &dirNode{fd: opts.start.dir, abs: opts.absDir}
	opts.start.dir = nil
	start.refs.Store(1)
	w.queue = append(w.queue, walkJob{node: start, chain: chain})
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

// ignoresAbove reads the ignore rules that apply to the walk of the folder
// start from the folders above it: the root's .git/info/exclude and the
// .gitignore files from the root down to start's parent. The folders are
// opened again one by one from the root without following links; if one
// has changed into something else, the rules from there down are left
// out.
func (r Roots) ignoresAbove(start *place) *ignoreChain {
	d, err := openRootDir(r.dirs[start.root])
	if err != nil {
		return nil
	}
	chain := gitInfoExclude(d)
	for i, name := range start.names {
		chain = chain.with(d, strings.Join(start.names[:i], "/"))
		if i == len(start.names)-1 {
			break
		}
		sub, err := d.openDir(name)
		d.close()
		if err != nil {
			return chain
		}
		d = sub
	}
	d.close()
	return chain
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

// stop ends the walk: the jobs not started are dropped.
func (w *walker) stop() {
	w.mu.Lock()
	w.stopped = true
	for _, j := range w.queue {
		j.node.release()
	}
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
		} else if job.files != nil {
			for _, e := range job.files {
				if !w.visit(e) {
					w.stop()
					break
				}
			}
		} else {
			more = w.readDir(job)
		}
		job.node.release()

		w.mu.Lock()
		w.active--
		if w.stopped {
			for _, j := range more {
				j.node.release()
			}
		} else {
			w.queue = append(w.queue, more...)
		}
		w.cond.Broadcast()
		w.mu.Unlock()
	}
}

// readDir opens and reads one folder and returns the jobs it makes: its
// subfolders and its files in batches.
func (w *walker) readDir(job walkJob) []walkJob {
	node := job.node
	if job.name != "" {
		fd, err := job.node.fd.openDir(job.name)
		if err != nil {
			// Gone, or no longer a folder (a link now): skip it.
			return nil
		}
		node = &dirNode{fd: fd, abs: job.node.abs + string(filepath.Separator) + job.name}
		node.refs.Store(1) // readDir's own, let go at its end
	} else {
		// The start: this job's reference becomes the folder's own.
		node.refs.Add(1)
	}
	ents, _ := node.fd.list()
	chain := job.chain
	if !w.opts.noIgnore {
		ignRel := w.prefix
		if job.rel != "" {
			if ignRel != "" {
				ignRel += "/"
			}
			ignRel += job.rel
		}
		chain = chain.with(node.fd, ignRel)
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
		if isDir {
			if w.opts.skipDir != nil && w.opts.skipDir(rel) {
				continue
			}
			jobs = append(jobs, walkJob{node: node, name: name, rel: rel, chain: chain})
			continue
		}
		batch = append(batch, entry{dir: node, abs: node.abs + string(filepath.Separator) + name, rel: rel, name: name, typ: typ})
		if len(batch) == batchSize {
			jobs = append(jobs, walkJob{node: node, files: batch})
			batch = nil
		}
	}
	if len(batch) > 0 {
		jobs = append(jobs, walkJob{node: node, files: batch})
	}
	// One reference for each job, and this one's own is let go.
	node.refs.Add(int32(len(jobs)))
	node.release()
	return jobs
}
