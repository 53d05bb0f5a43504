package gateway

// Replicas of one service (docs/scale.md). With Options.Cluster set, the
// gateway shares through it what other replicas can reuse, and counts
// what must be counted for the whole service:
//
//   - manifests and the search index, by digest (sharedManifest,
//     loadSharedIndex, shareIndex): a replica that starts with an empty
//     state directory answers from what another replica listed and
//     indexed, without starting a server or building the index;
//   - the hints of the state directory's hints.jsonl (sharedHintSet,
//     shareHints), for the servers of the configuration: each entry
//     carries the digest of the definition it was written for, so an
//     entry for another definition is ignored as it is in the file;
//   - request rates (clusterLimit) and the cap on open sessions
//     (httpSessions.reserve): a client that spreads its requests over
//     the replicas gets the allowance of one gateway;
//   - MCP 2025-11-25 sessions, when the Cluster is also a SessionStore
//     (sessionshare.go): any replica takes a session over from its saved
//     state, and messages for a client's event stream reach the replica
//     that holds it;
//   - /healthz says whether the cluster is reachable, and /metrics
//     carries the replica's name on every sample.
//
// Manifests, the index, hints and learned usage are what a replica serves
// and ranks by, so they are shared only when the Cluster authenticates
// them (package cluster does under toolsearch.cluster.key; without it,
// sharesValues is false and each replica keeps these to itself, as does
// background enrichment).
//
// When the cluster cannot be reached, every one of these falls back to
// what a gateway on its own does (the state directory, per-replica limits
// and cap) and nothing waits on it. When it comes back, the gateway
// writes its manifests and index again, since a restarted Redis has lost
// them. Without Options.Cluster, none of this runs.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/toolsearch/toolsearch/core/catalog"
	"github.com/toolsearch/toolsearch/core/hints"
	"github.com/toolsearch/toolsearch/core/search"
	"github.com/toolsearch/toolsearch/gateway/config"
	"github.com/toolsearch/toolsearch/gateway/upstream"
)

// Kinds of shared values.
const (
	sharedManifest = "manifest"
	sharedIndex    = "index"
	sharedHints    = "hints"
)

// clusterTimeout bounds what one start-up read from the cluster may take
// on top of the cluster's own per-command bound.
const clusterTimeout = 3 * time.Second

// sharesValues reports whether manifests, the index, hints and learned
// usage are shared: a Cluster that says whether it authenticates them
// (package cluster: a cluster key is configured) is asked; one that does
// not say is taken to.
func (g *Gateway) sharesValues() bool {
	if g.cluster == nil {
		return false
	}
	if s, ok := g.cluster.(interface{ SharesValues() bool }); ok {
		return s.SharesValues()
	}
	return true
}

// manifestDigest names a server's shared manifest: what identifies its
// tool list in the configuration (the same fingerprint as the state
// directory's), with its key.
func manifestDigest(s *config.Server) string {
	sum := sha256.Sum256([]byte(s.Key + "\x00" + upstream.Fingerprint(s)))
	return hex.EncodeToString(sum[:16])
}

// indexDigest names the shared index of a catalog: search.Fingerprint,
// which changes with any tool, hint, weight or analysis change.
func indexDigest(snap *catalog.Snapshot) string {
	return hex.EncodeToString(search.Fingerprint(snap))
}

// sharedManifest reads the manifest of s another replica shared, nil when
// there is none (or no cluster).
func (g *Gateway) sharedManifest(s *config.Server) *upstream.Manifest {
	if !g.sharesValues() {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	data, err := g.cluster.GetBlob(ctx, sharedManifest, manifestDigest(s))
	if err != nil || data == nil {
		if err != nil {
			g.log.Debug("no shared manifest", "server", s.Key, "err", err)
		}
		return nil
	}
	var m upstream.Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		g.log.Warn("ignoring a shared manifest that cannot be read", "server", s.Key, "err", err)
		return nil
	}
	if m.Key != s.Key || m.Fingerprint != upstream.Fingerprint(s) {
		g.log.Warn("ignoring a shared manifest made for another server", "server", s.Key)
		return nil
	}
	return &m
}

// hintsDigest names the shared hints of this configuration's servers.
func hintsDigest(servers []*config.Server) string {
	h := sha256.New()
	var ds []string
	for _, s := range servers {
		ds = append(ds, manifestDigest(s))
	}
	slices.Sort(ds)
	for _, d := range ds {
		fmt.Fprintf(h, "%s\x00", d)
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// sharedHintSet returns the hints other replicas shared, nil when none.
func (g *Gateway) sharedHintSet() *hints.Set {
	if !g.sharesValues() || g.static {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	data, err := g.cluster.GetBlob(ctx, sharedHints, hintsDigest(g.cfg.Enabled()))
	if err != nil || data == nil {
		return nil
	}
	set, err := hints.Parse(data)
	if err != nil {
		g.log.Warn("ignoring the shared search hints", "err", err)
		return nil
	}
	return set
}

// maxHintSwaps bounds how often shareHints reads and merges again because
// another replica wrote first.
const maxHintSwaps = 20

// shareHints adds set to the hints shared with the other replicas (what
// they shared meanwhile is kept, set's entries winning). The value is
// written back only over the one read (BlobSwapper), so that two replicas
// sharing at once both keep their hints: the later reads and merges
// again. It reports whether the shared value holds set's entries.
func (g *Gateway) shareHints(set *hints.Set) bool {
	if !g.sharesValues() || set == nil || set.Len() == 0 {
		return false
	}
	digest := hintsDigest(g.cfg.Enabled())
	sw, _ := g.cluster.(BlobSwapper)
	for try := range maxHintSwaps {
		if try > 0 { // another replica wrote first: read again, a little later
			time.Sleep(rand.N(time.Duration(try) * 10 * time.Millisecond))
		}
		ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
		old, err := g.cluster.GetBlob(ctx, sharedHints, digest)
		if err != nil {
			cancel()
			g.log.Debug("could not share the search hints", "err", err)
			return false
		}
		all := hints.New()
		if old != nil {
			if shared, err := hints.Parse(old); err == nil {
				all.Merge(shared)
			}
		}
		if old != nil && sameHints(all, set) {
			cancel()
			return true // nothing new
		}
		all.Merge(set)
		if sw == nil {
			err = g.cluster.PutBlob(ctx, sharedHints, digest, all.Marshal())
			cancel()
			if err != nil {
				g.log.Debug("could not share the search hints", "err", err)
			}
			return err == nil
		}
		swapped, err := sw.SwapBlob(ctx, sharedHints, digest, old, all.Marshal())
		cancel()
		if err != nil {
			g.log.Debug("could not share the search hints", "err", err)
			return false
		}
		if swapped {
			return true
		}
	}
	g.log.Info("search hints not shared: other replicas kept writing theirs; the next run shares them")
	return false
}

// shareManifest writes m for the other replicas.
func (g *Gateway) shareManifest(s *config.Server, m *upstream.Manifest) {
	if !g.sharesValues() {
		return
	}
	data, err := json.Marshal(m)
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
		err = g.cluster.PutBlob(ctx, sharedManifest, manifestDigest(s), data)
		cancel()
	}
	if err != nil {
		g.log.Debug("could not share the manifest", "server", s.Key, "err", err)
	}
}

// loadSharedIndex returns the index another replica shared for snap, nil
// when there is none.
func (g *Gateway) loadSharedIndex(snap *catalog.Snapshot) *search.Index {
	if !g.sharesValues() || g.static {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	digest := indexDigest(snap)
	data, err := g.cluster.GetBlob(ctx, sharedIndex, digest)
	if err != nil || data == nil {
		if err != nil {
			g.log.Debug("no shared search index", "err", err)
		}
		return nil
	}
	ix, err := search.Load(snap, data)
	if err != nil {
		g.log.Warn("ignoring the shared search index", "err", err)
		return nil
	}
	g.sharedLoads.Add(1)
	g.log.Info("search index loaded from the cluster", "tools", len(snap.Tools()), "digest", digest[:12])
	g.sharedIndex = ix.SavedFingerprint() // the state directory still lacks it
	return ix
}

// shareIndex writes the index data of snap for the other replicas.
func (g *Gateway) shareIndex(snap *catalog.Snapshot, fp, data []byte) bool {
	if !g.sharesValues() {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	if err := g.cluster.PutBlob(ctx, sharedIndex, hex.EncodeToString(fp), data); err != nil {
		g.log.Debug("could not share the search index", "err", err)
		return false
	}
	g.log.Debug("shared the search index", "tools", len(snap.Tools()), "bytes", len(data))
	return true
}

// rejoined writes again what a restarted cluster may have lost: the
// manifests of the servers listed live, the index, and the states of the
// MCP sessions this replica holds.
func (g *Gateway) rejoined() {
	g.log.Info("sharing this replica's manifests and index again")
	for _, k := range g.keys() {
		u := g.ups()[k]
		m, err := loadManifest(g.cfg.Gateway.StateDir, u.Config())
		if err != nil || m == nil {
			m = g.liveManifest(k)
		}
		if m != nil {
			g.shareManifest(u.Config(), m)
		}
	}
	g.reshareIndex.Store(true)
	g.indexChanged()
	g.resaveShared() // sessionshare.go
}

// liveManifest is the manifest of a server as the current view holds it
// (for a gateway without a state directory).
func (g *Gateway) liveManifest(key string) *upstream.Manifest {
	v := g.cur.Load()
	srv, ok := v.snap.Server(key)
	if !ok || v.fromCache[key] {
		return nil
	}
	u := g.ups()[key]
	m := &upstream.Manifest{Key: key, Fingerprint: upstream.Fingerprint(u.Config()), SavedAt: time.Now().UTC(), Tokens: v.tokens[key]}
	for _, t := range srv.Tools {
		m.Tools = append(m.Tools, t.Raw)
	}
	if x := v.extras[key]; x != nil {
		m.Resources, m.Templates, m.Prompts, m.Capabilities = x.Resources, x.Templates, x.Prompts, x.Capabilities
	}
	return m
}

// clusterLimit applies the configured rates to the requests of the whole
// service: the same buckets as the guard's (all clients together, and
// each MCP session or client address), kept in the cluster. The guard
// applies them per replica as well, which is what remains while the
// cluster is down.
func (g *Gateway) clusterLimit(next http.Handler) http.Handler {
	sv := g.cfg.Gateway.Serve
	if g.cluster == nil || (!sv.RateLimit.On() && !sv.SessionRateLimit.On()) {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			next.ServeHTTP(w, r)
			return
		}
		if wait, scope := g.takeShared(r.Context(), r); wait > 0 {
			secs := max(1, int(math.Ceil(wait.Seconds())))
			w.Header().Set("Retry-After", strconv.Itoa(secs))
			http.Error(w, fmt.Sprintf("too many requests (%s rate limit, shared by every replica); retry in %d s", scope, secs),
				http.StatusTooManyRequests)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// takeShared takes the request from the session's bucket and the global
// one; it returns how long to wait and which limit said so.
func (g *Gateway) takeShared(ctx context.Context, r *http.Request) (time.Duration, string) {
	sv := g.cfg.Gateway.Serve
	if sv.SessionRateLimit.On() {
		id := r.Header.Get("Mcp-Session-Id")
		bucket := "session." + hashKey(id)
		if id == "" {
			bucket = "addr." + hashKey(hostOnly(r.RemoteAddr))
		}
		wait, err := g.cluster.Take(ctx, bucket, sv.SessionRateLimit.PerSecond, sv.SessionRateLimit.Burst)
		if err == nil && wait > 0 {
			return wait, "per-session"
		}
	}
	if sv.RateLimit.On() {
		wait, err := g.cluster.Take(ctx, "global", sv.RateLimit.PerSecond, sv.RateLimit.Burst)
		if err == nil && wait > 0 {
			return wait, "global"
		}
	}
	return 0, ""
}

// hashKey names a bucket after a client's value without putting the
// value itself (a session id is a credential of sorts) in the cluster.
func hashKey(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:12])
}

// hostOnly strips the port from a remote address.
func hostOnly(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return hostport
}

// writeReplicaMetrics writes the gateway's metrics with the replica's
// label on every sample, then the cluster's own.
func (g *Gateway) writeReplicaMetrics(w io.Writer, write func(io.Writer)) {
	var b bytes.Buffer
	write(&b)
	label := "replica=" + strconv.Quote(g.cluster.Replica())
	for _, line := range strings.SplitAfter(b.String(), "\n") {
		if line == "" {
			continue
		}
		if strings.HasPrefix(line, "#") {
			io.WriteString(w, line)
			continue
		}
		// The name ends at its labels or at the value; a label's value
		// may hold spaces, so look for whichever comes first.
		i := strings.IndexAny(line, "{ ")
		switch {
		case i < 0:
			io.WriteString(w, line)
		case line[i] == '{':
			io.WriteString(w, line[:i+1]+label+","+line[i+1:])
		default:
			io.WriteString(w, line[:i]+"{"+label+"}"+line[i:])
		}
	}
	g.cluster.WriteMetrics(w)
}
