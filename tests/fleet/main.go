// Command fleet measures a cold start of `toolsearch serve` in front of the
// shared fleet: one stub stdio MCP server per server of the shared catalog
// (113 servers, 3,601 tools), built by ../shared/fleet/make-fleet.py beside
// the repository. It is what a user with many servers sees when the gateway
// starts.
//
// Run it from the repository root:
//
//	go run ./tests/fleet                  # 3 runs over the whole fleet
//	go run ./tests/fleet -runs 5 -servers 40
//	go run ./tests/fleet -bin ./bin/toolsearch -keep
//
// It builds the binary (unless -bin names one) and the fleet in a temporary
// directory, then, once per run, removes the state directory (no cached
// manifest, no saved index), starts `toolsearch serve --http` on a loopback
// port and, while the servers start:
//
//   - polls /healthz every -poll and records each answer's time;
//   - keeps one MCP session open (as soon as the port answers) and sends
//     tools/list every -poll, recording each answer's time;
//   - takes the index as complete when /healthz reports every server
//     "ready" (a server is ready once its tools are in the catalog and the
//     index), and records the time from spawning the process to then, and
//     the CPU time the gateway used until then (from /proc/PID/stat: less
//     sensitive than wall time to what else the machine is doing).
//
// Then it waits -settle, reads the gateway's resident memory (VmRSS and
// the peak VmHWM from /proc/PID/status), and runs every query of the
// shared dev query set (../shared/eval/dev.jsonl) -searches times through
// the search_tools tool over MCP, one after another, for p50 and p90.
//
// It prints one line per run and a summary with the minimum and median of
// each figure over the runs. When ../shared (or its fleet) is absent it
// says so and exits 0 without measuring.
//
// The figures measure the gateway: each stub costs about 35 ms of CPU and
// 7 MB, and the pollers a few per cent of one core. Run it on a machine
// that is otherwise idle (each run prints the load average it began
// with); docs/performance.md records the figures.
package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsearch/toolsearch/internal/sharedtest"
)

func main() {
	runs := flag.Int("runs", 3, "how many cold starts to measure")
	servers := flag.Int("servers", 0, "start only the first `N` servers of the fleet (0: all)")
	bin := flag.String("bin", "", "the toolsearch `binary` to measure (default: built from this checkout)")
	poll := flag.Duration("poll", 5*time.Millisecond, "how often /healthz and tools/list are asked during start")
	settle := flag.Duration("settle", 3*time.Second, "how long to wait after the index is complete before reading memory")
	searches := flag.Int("searches", 3, "how many times each query of the dev set is searched")
	timeout := flag.Duration("timeout", 2*time.Minute, "how long one start may take before the run fails")
	keep := flag.Bool("keep", false, "keep the temporary directory (binary, fleet, the gateway's stderr)")
	flag.Parse()
	if err := run(*runs, *servers, *bin, *poll, *settle, *searches, *timeout, *keep); err != nil {
		fmt.Fprintln(os.Stderr, "fleet:", err)
		os.Exit(1)
	}
}

// runResult is what one cold start measured.
type runResult struct {
	complete     time.Duration // spawn to every server ready
	firstHealth  time.Duration // spawn to the first /healthz answer
	slowHealth   time.Duration // slowest /healthz answer until complete
	slowHealthAt time.Duration // when it was asked, from spawn
	p90Health    time.Duration // the 90th percentile of the /healthz answers
	slowList     time.Duration // slowest tools/list answer until complete
	slowListAt   time.Duration // when it was asked, from spawn
	healthPolls  int
	listPolls    int
	tools        int           // tools /healthz counted at completion
	cpu          time.Duration // the gateway's CPU time (user and system) from spawn to complete
	load         float64       // the machine's load average over a minute when the run began
	rss, hwm     int64
	searchP50    time.Duration
	searchP90    time.Duration
	searchCount  int
	searchMisses int // searches that found nothing
}

func run(runs, servers int, bin string, poll, settle time.Duration, searches int, timeout time.Duration, keep bool) error {
	shared := sharedtest.Dir()
	makeFleet := filepath.Join(shared, "fleet", "make-fleet.py")
	queriesPath := filepath.Join(shared, "eval", "dev.jsonl")
	if shared == "" {
		fmt.Println("fleet: skipped: the shared folder beside the repository (../shared) is absent")
		return nil
	}
	for _, p := range []string{makeFleet, queriesPath} {
		if _, err := os.Stat(p); err != nil {
			fmt.Printf("fleet: skipped: %s is absent\n", p)
			return nil
		}
	}
	queries, err := readQueries(queriesPath)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "toolsearch-fleet-")
	if err != nil {
		return err
	}
	if keep {
		fmt.Println("fleet: keeping", tmp)
	} else {
		defer os.RemoveAll(tmp)
	}
	if bin == "" {
		bin = filepath.Join(tmp, "toolsearch")
		fmt.Println("fleet: building toolsearch")
		cmd := exec.Command("go", "build", "-trimpath", "-o", bin, "./cmd/toolsearch")
		cmd.Dir = repoRoot()
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("building toolsearch: %w", err)
		}
	} else if bin, err = filepath.Abs(bin); err != nil {
		return err
	}
	fleetDir := filepath.Join(tmp, "fleet")
	args := []string{makeFleet, fleetDir}
	if servers > 0 {
		args = append(args, "--servers", strconv.Itoa(servers))
	}
	fmt.Println("fleet: building the fleet")
	cmd := exec.Command("python3", args...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("building the fleet: %w", err)
	}
	var results []runResult
	for i := range runs {
		r, err := measure(bin, fleetDir, filepath.Join(tmp, fmt.Sprintf("serve-%d.log", i+1)), poll, settle, timeout, queries, searches)
		if err != nil {
			return fmt.Errorf("run %d: %w", i+1, err)
		}
		fmt.Printf("run %d (load %.1f): complete %v (gateway CPU %v)  first /healthz %v  slowest /healthz %v at %v, p90 %v (%d polls)  slowest tools/list %v at %v (%d polls)  tools %d  rss %s (peak %s)  search p50 %v p90 %v (%d, %d found nothing)\n",
			i+1, r.load, ms(r.complete), ms(r.cpu), ms(r.firstHealth), ms(r.slowHealth), ms(r.slowHealthAt), ms(r.p90Health), r.healthPolls, ms(r.slowList), ms(r.slowListAt), r.listPolls, r.tools,
			mib(r.rss), mib(r.hwm), us(r.searchP50), us(r.searchP90), r.searchCount, r.searchMisses)
		results = append(results, r)
	}
	summary(results)
	return nil
}

// repoRoot is the folder holding go.mod, found upward from the working
// directory (sharedtest.Dir found ../shared beside it).
func repoRoot() string {
	dir, _ := os.Getwd()
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			return dir
		}
	}
}

// measure runs one cold start.
func measure(bin, fleetDir, logPath string, poll, settle, timeout time.Duration, queries []string, searches int) (runResult, error) {
	var r runResult
	if err := os.RemoveAll(filepath.Join(fleetDir, "state")); err != nil {
		return r, err
	}
	port, err := freePort()
	if err != nil {
		return r, err
	}
	logf, err := os.Create(logPath)
	if err != nil {
		return r, err
	}
	defer logf.Close()
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	base := "http://" + addr
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.Command(bin, "serve", "-c", filepath.Join(fleetDir, "toolsearch.json"), "--http", addr, "--log-level", "warn")
	cmd.Stderr = logf
	r.load = loadAverage()
	spawned := time.Now()
	if err := cmd.Start(); err != nil {
		return r, err
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}()
	hc := &http.Client{Timeout: 10 * time.Second}

	// tools/list over one MCP session, from as soon as it connects until
	// the index is complete.
	var (
		listMu     sync.Mutex
		slowList   time.Duration
		slowListAt time.Duration
		lists      int
		listErr    error
	)
	stopList := make(chan struct{})
	listDone := make(chan struct{})
	go func() {
		defer close(listDone)
		var cs *mcp.ClientSession
		for cs == nil {
			select {
			case <-stopList:
				return
			case <-ctx.Done():
				return
			case <-time.After(poll):
			}
			cl := mcp.NewClient(&mcp.Implementation{Name: "fleet-start", Version: "1"}, nil)
			c, err := cl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: hc}, nil)
			if err == nil {
				cs = c
			}
		}
		defer cs.Close()
		for {
			select {
			case <-stopList:
				return
			case <-ctx.Done():
				return
			case <-time.After(poll):
			}
			t0 := time.Now()
			_, err := cs.ListTools(ctx, nil)
			d := time.Since(t0)
			listMu.Lock()
			if err != nil && listErr == nil && ctx.Err() == nil {
				listErr = fmt.Errorf("tools/list: %w", err)
			}
			lists++
			if d > slowList {
				slowList, slowListAt = d, t0.Sub(spawned)
			}
			listMu.Unlock()
		}
	}()

	// /healthz until every server is ready.
	var healthTook []time.Duration
	for {
		select {
		case <-ctx.Done():
			close(stopList)
			<-listDone
			return r, fmt.Errorf("the servers were not all ready within %v (the gateway's log: %s)", timeout, logPath)
		case <-time.After(poll):
		}
		t0 := time.Now()
		h, err := health(ctx, hc, base)
		d := time.Since(t0)
		if err != nil {
			if exited(cmd) {
				close(stopList)
				<-listDone
				return r, fmt.Errorf("toolsearch exited (its log: %s)", logPath)
			}
			continue // not listening yet
		}
		if r.healthPolls == 0 {
			r.firstHealth = time.Since(spawned)
		}
		r.healthPolls++
		healthTook = append(healthTook, d)
		if d > r.slowHealth {
			r.slowHealth, r.slowHealthAt = d, t0.Sub(spawned)
		}
		if h.complete() {
			r.complete = time.Since(spawned)
			r.tools = h.Tools
			if r.cpu, err = cpuTime(cmd.Process.Pid); err != nil {
				close(stopList)
				<-listDone
				return r, err
			}
			break
		}
	}
	close(stopList)
	<-listDone
	listMu.Lock()
	r.slowList, r.slowListAt, r.listPolls = slowList, slowListAt, lists
	slices.Sort(healthTook)
	if len(healthTook) > 0 {
		r.p90Health = healthTook[len(healthTook)*9/10]
	}
	err = listErr
	listMu.Unlock()
	if err != nil {
		return r, err
	}

	time.Sleep(settle)
	if r.rss, r.hwm, err = memory(cmd.Process.Pid); err != nil {
		return r, err
	}

	// Searches over MCP, one after another.
	cl := mcp.NewClient(&mcp.Implementation{Name: "fleet-search", Version: "1"}, nil)
	cs, err := cl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: hc}, nil)
	if err != nil {
		return r, fmt.Errorf("connecting for searches: %w", err)
	}
	defer cs.Close()
	var took []time.Duration
	for range searches {
		for _, q := range queries {
			t0 := time.Now()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "search_tools", Arguments: map[string]any{"query": q}})
			took = append(took, time.Since(t0))
			if err != nil {
				return r, fmt.Errorf("search %q: %w", q, err)
			}
			if res.IsError {
				return r, fmt.Errorf("search %q: %s", q, text(res))
			}
			if !strings.Contains(text(res), `"name"`) {
				r.searchMisses++
			}
		}
	}
	slices.Sort(took)
	r.searchCount = len(took)
	if len(took) > 0 {
		r.searchP50, r.searchP90 = took[len(took)/2], took[len(took)*9/10]
	}
	return r, nil
}

// healthz is what the measure reads of /healthz.
type healthz struct {
	Tools   int `json:"tools"`
	Servers []struct {
		Name   string `json:"name"`
		State  string `json:"state"`
		Cached bool   `json:"from_cache"`
	} `json:"servers"`
}

// complete reports whether every server is ready with its tools listed
// live.
func (h *healthz) complete() bool {
	if len(h.Servers) == 0 {
		return false
	}
	for _, s := range h.Servers {
		if s.State != "ready" || s.Cached {
			return false
		}
	}
	return true
}

func health(ctx context.Context, hc *http.Client, base string) (*healthz, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/healthz", nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("/healthz: %s", resp.Status)
	}
	var h healthz
	if err := json.Unmarshal(body, &h); err != nil {
		return nil, fmt.Errorf("/healthz: %w", err)
	}
	return &h, nil
}

// exited reports whether the process has exited (without reaping it).
func exited(cmd *exec.Cmd) bool {
	return cmd.Process.Signal(syscall.Signal(0)) != nil
}

// clockTick is the unit of the CPU times in /proc/PID/stat (USER_HZ,
// 100 on Linux).
const clockTick = 10 * time.Millisecond

// cpuTime reads the CPU time a process has used, user and system.
func cpuTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("reading CPU time: %w", err)
	}
	// The fields after the command's name, which is in parentheses and
	// may hold spaces: utime and stime are the 14th and 15th of the line.
	_, rest, ok := strings.Cut(string(b), ") ")
	f := strings.Fields(rest)
	if !ok || len(f) < 13 {
		return 0, fmt.Errorf("reading CPU time: unexpected /proc/%d/stat", pid)
	}
	var total int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("reading CPU time: %w", err)
		}
		total += n
	}
	return time.Duration(total) * clockTick, nil
}

// loadAverage is the machine's load average over the last minute (0 when
// it cannot be read).
func loadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	l, _ := strconv.ParseFloat(f[0], 64)
	return l
}

// memory reads VmRSS and VmHWM of a process, in bytes.
func memory(pid int) (rss, hwm int64, err error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, fmt.Errorf("reading resident memory: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || (k != "VmRSS" && k != "VmHWM") {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("reading %s: %w", k, err)
		}
		if k == "VmRSS" {
			rss = kb << 10
		} else {
			hwm = kb << 10
		}
	}
	if rss == 0 {
		return 0, 0, errors.New("reading resident memory: no VmRSS in /proc/PID/status")
	}
	return rss, hwm, sc.Err()
}

func readQueries(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var q struct {
			Query string `json:"query"`
		}
		if err := json.Unmarshal(sc.Bytes(), &q); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		if q.Query != "" {
			out = append(out, q.Query)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no queries", path)
	}
	return out, nil
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// summary prints the minimum and median of each figure over the runs.
func summary(rs []runResult) {
	if len(rs) == 0 {
		return
	}
	durs := func(f func(runResult) time.Duration) (lo, mid time.Duration) {
		v := make([]time.Duration, len(rs))
		for i, r := range rs {
			v[i] = f(r)
		}
		slices.Sort(v)
		return v[0], v[len(v)/2]
	}
	ints := func(f func(runResult) int64) (lo, mid int64) {
		v := make([]int64, len(rs))
		for i, r := range rs {
			v[i] = f(r)
		}
		slices.SortFunc(v, cmp.Compare)
		return v[0], v[len(v)/2]
	}
	fmt.Printf("summary over %d runs (min / median):\n", len(rs))
	lo, mid := durs(func(r runResult) time.Duration { return r.complete })
	fmt.Printf("  spawn -> complete index  %v / %v\n", ms(lo), ms(mid))
	lo, mid = durs(func(r runResult) time.Duration { return r.cpu })
	fmt.Printf("  gateway CPU to complete  %v / %v\n", ms(lo), ms(mid))
	lo, mid = durs(func(r runResult) time.Duration { return r.firstHealth })
	fmt.Printf("  spawn -> first /healthz  %v / %v\n", ms(lo), ms(mid))
	lo, mid = durs(func(r runResult) time.Duration { return r.slowHealth })
	fmt.Printf("  slowest /healthz         %v / %v\n", ms(lo), ms(mid))
	lo, mid = durs(func(r runResult) time.Duration { return r.p90Health })
	fmt.Printf("  /healthz p90             %v / %v\n", ms(lo), ms(mid))
	lo, mid = durs(func(r runResult) time.Duration { return r.slowList })
	fmt.Printf("  slowest tools/list       %v / %v\n", ms(lo), ms(mid))
	a, b := ints(func(r runResult) int64 { return r.rss })
	fmt.Printf("  resident memory (VmRSS)  %s / %s\n", mib(a), mib(b))
	a, b = ints(func(r runResult) int64 { return r.hwm })
	fmt.Printf("  peak memory (VmHWM)      %s / %s\n", mib(a), mib(b))
	lo, mid = durs(func(r runResult) time.Duration { return r.searchP50 })
	fmt.Printf("  search p50 over MCP      %v / %v\n", us(lo), us(mid))
	lo, mid = durs(func(r runResult) time.Duration { return r.searchP90 })
	fmt.Printf("  search p90 over MCP      %v / %v\n", us(lo), us(mid))
}

func ms(d time.Duration) string { return fmt.Sprintf("%.0fms", float64(d)/float64(time.Millisecond)) }
func us(d time.Duration) string { return fmt.Sprintf("%.0fµs", float64(d)/float64(time.Microsecond)) }
func mib(n int64) string        { return fmt.Sprintf("%.1fMiB", float64(n)/(1<<20)) }
