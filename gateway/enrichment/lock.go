package enrichment

import "path/filepath"

// Gateways that share a state directory (a stdio client starts one per
// session, and each reads the same ~/.cache/toolsearch) enrich one at a
// time: a run holds the directory's enrich.lock, and a gateway that finds
// it held leaves the run to the holder and takes the hints it writes from
// the file. Only the holder writes enrich.json, so the day's spend is
// never counted twice nor lost. On Unix the lock is flock(2), released by
// the kernel when its process dies; elsewhere there is no such lock, and
// gateways sharing a directory each run (lock_other.go).

// lockFile is the lock in the state directory.
const lockFile = "enrich.lock"

// lockPath is the lock's path in the state directory dir.
func lockPath(dir string) string { return filepath.Join(dir, lockFile) }
