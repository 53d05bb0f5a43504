// Package loadtest drives toolsearch's gateway, in process and served over
// streamable HTTP, with many concurrent client sessions, each doing a mix of
// searches and calls against real upstream MCP servers (the npm servers
// @modelcontextprotocol/server-everything and server-memory, installed by
// `npm ci` at the repository root).
//
// TestLoadSmall (8 sessions × 50 operations) always runs. TestLoad (64
// sessions × 1,000 operations) runs when TOOLSEARCH_LOAD=1:
//
//	TOOLSEARCH_LOAD=1 go test -run TestLoad$ -v ./tests/loadtest
//
// The cluster runs put several replicas on one real redis-server (skipped
// when it is not installed) behind a load balancer that is not sticky:
// every request goes to the next replica, so each session is taken over
// by every replica from the state the others saved, and its event stream
// is on one of them. In the same run, a single gateway does the
// per-replica share of the work first, and the two latencies are logged
// side by side. TestLoadClusterSmall (2 replicas × 8 sessions × 50
// operations) always runs; TestLoadCluster (4 replicas × 64 sessions ×
// 1,000 operations) runs when TOOLSEARCH_LOAD=1:
//
//	TOOLSEARCH_LOAD=1 go test -run TestLoadCluster$ -v -timeout 60m ./tests/loadtest
//
// Both fail on any error, and on goroutine or open-file growth beyond a
// small tolerance once the sessions have closed; they log p50 and p99
// latency, throughput, heap and the goroutine and file-descriptor counts
// before and after.
package loadtest
