package cluster

import (
	"fmt"
	"io"
	"strconv"
	"sync/atomic"
)

// stats counts what the Cluster did, for /metrics.
type stats struct {
	blobHits, blobMisses, blobPuts atomic.Int64
	blobRefused                    atomic.Int64 // shared values whose tag failed (blobs.go)
	leasesDropped                  atomic.Int64 // session leases dropped as forged (sessions.go)
	limited                        atomic.Int64 // requests a shared bucket refused
	outages                        atomic.Int64 // times Redis went down
	// MCP sessions' saved states and stream messages
	sessionSaves, sessionLoads, sessionRefused      atomic.Int64
	streamPublished, streamDelivered, streamRefused atomic.Int64
	eventsKept, eventsReplayed                      atomic.Int64
	leasesTaken                                     atomic.Int64 // work leases taken (enrich.go)
}

// WriteMetrics writes the cluster's metrics in the Prometheus text format,
// each with this replica's label.
func (c *Cluster) WriteMetrics(w io.Writer) {
	r := strconv.Quote(c.replica)
	up := 0
	if c.up.Load() {
		up = 1
	}
	p := func(name, typ, help string, v int64, labels string) {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n%s{replica=%s%s} %d\n", name, help, name, typ, name, r, labels, v)
	}
	p("toolsearch_cluster_redis_up", "gauge", "1 while Redis answers, 0 while this replica serves from its local state.", int64(up), "")
	p("toolsearch_cluster_redis_outages_total", "counter", "Times Redis became unreachable.", c.stats.outages.Load(), "")
	fmt.Fprintf(w, "# HELP toolsearch_cluster_shared_reads_total Shared values (manifests, indexes) read, found or not.\n# TYPE toolsearch_cluster_shared_reads_total counter\n")
	fmt.Fprintf(w, "toolsearch_cluster_shared_reads_total{replica=%s,result=\"hit\"} %d\n", r, c.stats.blobHits.Load())
	fmt.Fprintf(w, "toolsearch_cluster_shared_reads_total{replica=%s,result=\"miss\"} %d\n", r, c.stats.blobMisses.Load())
	p("toolsearch_cluster_shared_writes_total", "counter", "Shared values written.", c.stats.blobPuts.Load(), "")
	p("toolsearch_cluster_shared_refused_total", "counter", "Shared values refused: their tag under the cluster key failed (altered, forged, or another key's).", c.stats.blobRefused.Load(), "")
	p("toolsearch_cluster_rate_limited_total", "counter", "Requests a service-wide rate bucket refused.", c.stats.limited.Load(), "")
	p("toolsearch_cluster_session_saves_total", "counter", "MCP session states saved for another replica to take over.", c.stats.sessionSaves.Load(), "")
	p("toolsearch_cluster_session_loads_total", "counter", "Saved MCP session states read back to take a session over.", c.stats.sessionLoads.Load(), "")
	p("toolsearch_cluster_session_refused_total", "counter", "Saved MCP session states refused: altered, or not made for the session id shown.", c.stats.sessionRefused.Load(), "")
	p("toolsearch_cluster_stream_published_total", "counter", "Messages published for a session's event stream held by another replica.", c.stats.streamPublished.Load(), "")
	p("toolsearch_cluster_stream_delivered_total", "counter", "Messages received for an event stream this replica holds.", c.stats.streamDelivered.Load(), "")
	p("toolsearch_cluster_events_kept_total", "counter", "Events of MCP sessions' SSE streams kept so that any replica can replay them.", c.stats.eventsKept.Load(), "")
	p("toolsearch_cluster_events_replayed_total", "counter", "Kept events replayed to a client that resumed its stream.", c.stats.eventsReplayed.Load(), "")
	p("toolsearch_cluster_session_leases_dropped_total", "counter", "Session leases dropped because they expire later than any replica writes one (forged).", c.stats.leasesDropped.Load(), "")
	p("toolsearch_cluster_leases_taken_total", "counter", "Leases on shared work (a tool definition to enrich) this replica took.", c.stats.leasesTaken.Load(), "")
	p("toolsearch_cluster_stream_refused_total", "counter", "Stream messages dropped because they did not open for their session (forged).", c.stats.streamRefused.Load(), "")
}
